// build-flags: -shared -fPIC
/* Plugin "a" of class_reload.c (class_plugin.h). */
#define PLUGIN_NAME "a"
#include "class_plugin.h"
