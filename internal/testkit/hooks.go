package testkit

import (
	"context"
	"maps"
	"sync"

	"github.com/redis/go-redis/v9"
)

// CommandCounter is a go-redis hook that counts the commands it sees by
// name (redis.Cmder.Name: "client" for CLIENT ID), pipelines and
// transactions included. It is safe for concurrent use. The zero value is
// ready.
type CommandCounter struct {
	mu        sync.Mutex
	seen      map[string]int
	pipelines int
}

// Pipelines returns how many pipelines and transactions the hook saw.
func (h *CommandCounter) Pipelines() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.pipelines
}

// Counts returns a copy of the counts by command name.
func (h *CommandCounter) Counts() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.seen)
}

func (h *CommandCounter) note(cmds ...redis.Cmder) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.seen == nil {
		h.seen = map[string]int{}
	}
	for _, c := range cmds {
		h.seen[c.Name()]++
	}
}

// DialHook passes dials through.
func (h *CommandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook counts the command.
func (h *CommandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.note(cmd)
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook counts every command of the pipeline.
func (h *CommandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.note(cmds...)
		h.mu.Lock()
		h.pipelines++
		h.mu.Unlock()
		return next(ctx, cmds)
	}
}
