/*
 * rktest: a minimal Redis module for classify's tests. It registers three
 * commands the built-in table does not know, each with different flags, so
 * Refresh can be tested against what a real server reports for module
 * commands:
 *
 *   RKTEST.GET   flags "readonly fast"  -> read-only after Refresh
 *   RKTEST.SET   flags "write"          -> master
 *   RKTEST.PING  no flags               -> master (module command without metadata)
 *   RKTest.Mixed flags "readonly", registered in mixed case
 *
 * It does not include redismodule.h (not packaged with Debian's Redis): it
 * fetches the three API functions it needs by name through the GetApi
 * pointer Redis passes in the context, exactly as RedisModule_Init does.
 * Build: cc -shared -fPIC -o rktest.so rktest.c
 */
typedef struct RedisModuleCtx RedisModuleCtx;
typedef struct RedisModuleString RedisModuleString;
typedef int (*RedisModuleCmdFunc)(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);

#define REDISMODULE_OK 0
#define REDISMODULE_ERR 1
#define REDISMODULE_APIVER_1 1

static int (*RM_GetApi)(const char *, void *);
static int (*RM_CreateCommand)(RedisModuleCtx *, const char *, RedisModuleCmdFunc, const char *, int, int, int);
static void (*RM_SetModuleAttribs)(RedisModuleCtx *, const char *, int, int);
static int (*RM_ReplyWithSimpleString)(RedisModuleCtx *, const char *);

static int reply_ok(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    (void)argv;
    (void)argc;
    return RM_ReplyWithSimpleString(ctx, "OK");
}

int RedisModule_OnLoad(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    (void)argv;
    (void)argc;
    RM_GetApi = (int (*)(const char *, void *))(unsigned long)((void **)ctx)[0];
    if (RM_GetApi("RedisModule_CreateCommand", (void *)&RM_CreateCommand) != REDISMODULE_OK ||
        RM_GetApi("RedisModule_SetModuleAttribs", (void *)&RM_SetModuleAttribs) != REDISMODULE_OK ||
        RM_GetApi("RedisModule_ReplyWithSimpleString", (void *)&RM_ReplyWithSimpleString) != REDISMODULE_OK)
        return REDISMODULE_ERR;
    RM_SetModuleAttribs(ctx, "rktest", 1, REDISMODULE_APIVER_1);
    if (RM_CreateCommand(ctx, "rktest.get", reply_ok, "readonly fast", 1, 1, 1) != REDISMODULE_OK ||
        RM_CreateCommand(ctx, "rktest.set", reply_ok, "write", 1, 1, 1) != REDISMODULE_OK ||
        RM_CreateCommand(ctx, "rktest.ping", reply_ok, "", 0, 0, 0) != REDISMODULE_OK ||
        RM_CreateCommand(ctx, "RKTest.Mixed", reply_ok, "readonly", 1, 1, 1) != REDISMODULE_OK)
        return REDISMODULE_ERR;
    return REDISMODULE_OK;
}
