/*
 * bad_null.c - a test plugin that is refused: tickd_plugin_classes returns
 * NULL (while claiming one class, which the host must not believe).
 */
#include "tickd/plugin.h"

const uint32_t tickd_plugin_abi = TICKD_PLUGIN_ABI;

const tkp_class *const *tickd_plugin_classes(const tkp_api *api, size_t *n);
const tkp_class *const *tickd_plugin_classes(const tkp_api *api, size_t *n)
{
    *n = 1;
    return NULL;
}
