/*
 * abi2.c - a test plugin built for plugin ABI 2 (before thread-safe classes):
 * it still loads, and its class, whose descriptor has no `flags` in ABI 2,
 * is never taken for a thread-safe one (the bits set here stand for what
 * an ABI 2 descriptor's memory might hold past its end).
 */
#include "tickd/plugin.h"

static void elder_tick(tkp_obj *o, float dt, const tkp_ctx *c) {}

static const tkp_class elder_class = {.abi = 2, .name = "elder", .position = -1,
                                      .tick = elder_tick, .flags = TKP_CLASS_THREAD_SAFE};

static const tkp_class *const classes[] = {&elder_class};

const uint32_t tickd_plugin_abi = 2;

const tkp_class *const *tickd_plugin_classes(const tkp_api *api, size_t *n);
const tkp_class *const *tickd_plugin_classes(const tkp_api *api, size_t *n)
{
    *n = 1;
    return classes;
}
