/*
 * plugin.c - loading entity classes from shared objects ([plugins] load).
 *
 * A plugin is dlopen()ed with RTLD_NOW | RTLD_LOCAL (every symbol it needs
 * must resolve at load), then checked in this order, each failure naming the
 * file and the symbol or class at fault and loading nothing of it:
 *   1. `tickd_plugin_abi` exists and is TICKD_PLUGIN_ABI_MIN ..
 *      TICKD_PLUGIN_ABI (an older version's structs are a prefix of ours);
 *   2. `tickd_plugin_classes` exists;
 *   3. `tickd_plugin_init`, if present, returns 0;
 *   4. the classes it returns pass tks_register_class (names unique across
 *      built-in and plugin classes, props inside the state...).
 * Handles stay open until the sim is freed (after its entities).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "sim_int.h"

int tks_load_plugin(tks_sim *s, const char *path, char err[TKS_ERR_MAX])
{
    dlerror();
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        snprintf(err, TKS_ERR_MAX, "%s: cannot load: %s", path, why ? why : "unknown error");
        return TK_EINVAL;
    }
    const uint32_t *abi = dlsym(h, TICKD_PLUGIN_ABI_SYMBOL);
    if (!abi) {
        snprintf(err, TKS_ERR_MAX, "%s: missing symbol %s", path, TICKD_PLUGIN_ABI_SYMBOL);
        goto fail;
    }
    if (*abi < TICKD_PLUGIN_ABI_MIN || *abi > TICKD_PLUGIN_ABI) {
        snprintf(err, TKS_ERR_MAX, "%s: plugin ABI version %u, this tickd speaks %u", path,
                 (unsigned)*abi, TICKD_PLUGIN_ABI);
        goto fail;
    }
    tkp_classes_fn classes;
    *(void **)&classes = dlsym(h, TICKD_PLUGIN_CLASSES_SYMBOL);
    if (!classes) {
        snprintf(err, TKS_ERR_MAX, "%s: missing symbol %s", path, TICKD_PLUGIN_CLASSES_SYMBOL);
        goto fail;
    }
    tkp_init_fn init;
    *(void **)&init = dlsym(h, TICKD_PLUGIN_INIT_SYMBOL);
    if (init) {
        char why[200] = "";
        if (init(tks_api(), why, sizeof why) != 0) {
            snprintf(err, TKS_ERR_MAX, "%s: %s failed: %s", path, TICKD_PLUGIN_INIT_SYMBOL,
                     why[0] ? why : "no reason given");
            goto fail;
        }
    }
    size_t n = 0;
    const tkp_class *const *list = classes(tks_api(), &n);
    if (!list || n == 0) {
        snprintf(err, TKS_ERR_MAX, "%s: %s returned no class", path, TICKD_PLUGIN_CLASSES_SYMBOL);
        goto fail;
    }
    /* All or nothing: check every class before registering any. */
    for (size_t i = 0; i < n; i++) {
        if (!list[i] || !list[i]->name) {
            snprintf(err, TKS_ERR_MAX, "%s: class %zu has no descriptor or name", path, i);
            goto fail;
        }
        if (tks_class_find(s, list[i]->name)) {
            snprintf(err, TKS_ERR_MAX, "%s: class '%s' already exists (from %s)", path,
                     list[i]->name, tks_class_origin(tks_class_find(s, list[i]->name)));
            goto fail;
        }
        for (size_t j = 0; j < i; j++) {
            if (list[j]->name && !strcmp(list[j]->name, list[i]->name)) {
                snprintf(err, TKS_ERR_MAX, "%s: class '%s' is listed twice", path, list[i]->name);
                goto fail;
            }
        }
        if (tks_check_class(s, list[i], path, err) != 0)
            goto fail;
    }
    for (size_t i = 0; i < n; i++) {
        /* Checked above; only the core's class table can still refuse. */
        if (tks_register_class(s, list[i], path, err) != 0) {
            tks__keep_handle(s, h); /* earlier classes of it are in use */
            return TK_ELIMIT;
        }
    }
    tks__keep_handle(s, h);
    return 0;
fail:
    dlclose(h);
    return TK_EINVAL;
}
