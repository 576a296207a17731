// build-flags: -shared -fPIC
/* Plugin "b" of class_reload.c (class_plugin.h). */
#define PLUGIN_NAME "b"
#include "class_plugin.h"
