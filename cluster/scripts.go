package cluster

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// SCRIPT LOAD, EXISTS and FLUSH have no key, so routed as keyless commands
// they would reach one master only, and an EVALSHA of a key on another
// shard would answer NOSCRIPT. As go-redis's ClusterClient does, they run
// on every master of the current map. (A master added later has not got
// the script: redis.Script's Run falls back to EVAL on NOSCRIPT.)

// ScriptLoad loads script on every master and returns its SHA1; an error
// of any master is returned (joined), the script perhaps loaded on others.
func (c *Client) ScriptLoad(ctx context.Context, script string) *redis.StringCmd {
	cmd := redis.NewStringCmd(ctx, "script", "load", script)
	var mu sync.Mutex
	err := c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		sha, err := n.ScriptLoad(ctx, script).Result()
		if err == nil {
			mu.Lock()
			cmd.SetVal(sha)
			mu.Unlock()
		}
		return err
	})
	if err != nil {
		cmd.SetErr(err)
	}
	return cmd
}

// ScriptExists reports, per SHA1, whether every master has the script.
func (c *Client) ScriptExists(ctx context.Context, hashes ...string) *redis.BoolSliceCmd {
	args := append([]any{"script", "exists"}, toAny(hashes)...)
	cmd := redis.NewBoolSliceCmd(ctx, args...)
	all := make([]bool, len(hashes))
	for i := range all {
		all[i] = true
	}
	var mu sync.Mutex
	err := c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		got, err := n.ScriptExists(ctx, hashes...).Result()
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		for i := range all {
			all[i] = all[i] && i < len(got) && got[i]
		}
		return nil
	})
	cmd.SetVal(all)
	if err != nil {
		cmd.SetErr(err)
	}
	return cmd
}

// ScriptFlush empties the script cache of every master.
func (c *Client) ScriptFlush(ctx context.Context) *redis.StatusCmd {
	cmd := redis.NewStatusCmd(ctx, "script", "flush")
	err := c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return n.ScriptFlush(ctx).Err() })
	cmd.SetVal("OK")
	if err != nil {
		cmd.SetErr(err)
	}
	return cmd
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
