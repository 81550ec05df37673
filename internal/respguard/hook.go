package respguard

import "github.com/redis/go-redis/v9"

// Hook bounds the replies on every connection a go-redis client dials
// once it is added (its DialHook wraps them as WrapDialer does; commands
// pass through untouched): for clients rediskit is given rather than
// builds (multidb's Database.Client), whose Dialer it cannot replace.
// Connections the client already had stay as they are.
func Hook(lim Limits) redis.Hook { return dialHook{lim: lim} }

type dialHook struct{ lim Limits }

func (h dialHook) DialHook(next redis.DialHook) redis.DialHook {
	return redis.DialHook(WrapDialer(DialFunc(next), h.lim))
}

func (dialHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (dialHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
