/*
 * bad_notick.c - a test plugin that is refused: class "idle" has no tick
 * function (required by the ABI, even for a class with a batch form).
 */
#include "tickd/plugin.h"

static void idle_batch(const tkp_run *run, float dt, const tkp_ctx *c) {}

static const tkp_class idle_class = {
    .abi = TICKD_PLUGIN_ABI, .name = "idle", .position = -1, .tick_batch = idle_batch};

static const tkp_class *const classes[] = {&idle_class};

const uint32_t tickd_plugin_abi = TICKD_PLUGIN_ABI;

const tkp_class *const *tickd_plugin_classes(const tkp_api *api, size_t *n);
const tkp_class *const *tickd_plugin_classes(const tkp_api *api, size_t *n)
{
    *n = 1;
    return classes;
}
