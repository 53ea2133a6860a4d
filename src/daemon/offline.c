/*
 * offline.c - a daemon without its socket: the engine and entity layer built
 * from the config, for running methods directly (fuzz targets, tests).
 */
#include <stdio.h>
#include <string.h>

#include "daemon.h"

int tkd_init_offline(tkd *d, char *err, size_t errlen)
{
    tk_engine_desc ed;
    tk_engine_desc_default(&ed);
    ed.tick_rate = 0;
    ed.fixed_dt = d->cfg.fixed_dt > 0 ? d->cfg.fixed_dt : 1.0 / 60;
    ed.max_dt = d->cfg.max_dt;
    ed.time_dilation = d->cfg.time_dilation;
    if (tk_engine_new(&ed, &d->engine) != 0) {
        snprintf(err, errlen, "invalid engine settings");
        return -1;
    }
    d->world = tk_engine_world(d->engine);
    tks_config sc = {.max_entities = d->cfg.max_entities,
                     .max_tick_functions = d->cfg.max_tick_functions,
                     .max_template_bytes = d->cfg.max_template_bytes};
    d->sim = tks_new(d->engine, &sc);
    d->offline = true;
    for (size_t i = 0; i < d->cfg.plugins.count; i++) {
        char perr[TKS_ERR_MAX];
        if (tks_load_plugin(d->sim, d->cfg.plugins.items[i], perr) != 0) {
            snprintf(err, errlen, "[plugins] load: %s", perr);
            return -1;
        }
    }
    for (size_t i = 0; i < d->cfg.levels.count; i++) {
        char serr[TKS_ERR_MAX];
        if (strcmp(d->cfg.levels.items[i], "persistent") != 0 &&
            tks_level_add(d->sim, d->cfg.levels.items[i], serr) != 0) {
            snprintf(err, errlen, "[world] levels: %s", serr);
            return -1;
        }
    }
    return 0;
}

int tkd_check_plugins(const tkd_config *cfg, char *err, size_t errlen)
{
    if (!cfg->plugins.count)
        return 0;
    tk_engine_desc ed;
    tk_engine_desc_default(&ed);
    tk_engine_t *e;
    if (tk_engine_new(&ed, &e) != 0) {
        snprintf(err, errlen, "cannot create an engine");
        return -1;
    }
    tks_sim *s = tks_new(e, NULL);
    int rc = 0;
    for (size_t i = 0; i < cfg->plugins.count && rc == 0; i++) {
        char perr[TKS_ERR_MAX];
        if (tks_load_plugin(s, cfg->plugins.items[i], perr) != 0) {
            snprintf(err, errlen, "[plugins] load: %s", perr);
            rc = -1;
        }
    }
    tks_free(s);
    tk_engine_free(e);
    return rc;
}

void tkd_fini_offline(tkd *d)
{
    tkd_methods_shutdown(d);
    tks_free(d->sim);
    tk_engine_free(d->engine);
    d->sim = NULL;
    d->engine = NULL;
    d->world = NULL;
}
