// A search/ header that reaches into the CLI: what tests/check_layering.cmake
// must refuse (the include_layering_finds_a_forbidden_include test).
#include "costmodel/cost_graph.h"
#include "tools/cli/args.h"
