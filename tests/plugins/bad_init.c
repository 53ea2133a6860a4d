/*
 * bad_init.c - a test plugin that is refused by its own tickd_plugin_init,
 * which fails with a reason the host must show.  Its classes would be valid:
 * tickd_plugin_classes must not even be called.
 */
#include <stdio.h>

#include "tickd/plugin.h"

static void licensed_tick(tkp_obj *o, float dt, const tkp_ctx *c) {}

static const tkp_class licensed_class = {
    .abi = TICKD_PLUGIN_ABI, .name = "licensed", .position = -1, .tick = licensed_tick};

static const tkp_class *const classes[] = {&licensed_class};

const uint32_t tickd_plugin_abi = TICKD_PLUGIN_ABI;

int tickd_plugin_init(const tkp_api *api, char *err, size_t errlen);
int tickd_plugin_init(const tkp_api *api, char *err, size_t errlen)
{
    snprintf(err, errlen, "licence file /nonexistent/licensed.key is missing");
    return -1;
}

const tkp_class *const *tickd_plugin_classes(const tkp_api *api, size_t *n);
const tkp_class *const *tickd_plugin_classes(const tkp_api *api, size_t *n)
{
    *n = 1;
    return classes;
}
