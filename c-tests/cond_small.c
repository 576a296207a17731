/* A small condition-variable producer/consumer (prodcons_core.h) for slow tools such as
 * helgrind: ITEMS items (argument 1, default 2000). */
#include "prodcons_core.h"

int main(int argc, char **argv) { return prodcons_main("cond_small", argc > 1 ? atol(argv[1]) : 2000, 120); }
