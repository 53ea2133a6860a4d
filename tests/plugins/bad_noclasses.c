/*
 * bad_noclasses.c - a test plugin that is refused: it declares the right ABI
 * version but exports no tickd_plugin_classes.
 */
#include "tickd/plugin.h"

const uint32_t tickd_plugin_abi = TICKD_PLUGIN_ABI;
