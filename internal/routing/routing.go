package routing

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/redisopt"
)

// ProcessFunc runs one command.
type ProcessFunc func(ctx context.Context, cmd redis.Cmder) error

// PipelineFunc runs a pipeline, or a transaction, which go-redis hands over
// wrapped in MULTI ... EXEC (see IsTx).
type PipelineFunc func(ctx context.Context, cmds []redis.Cmder) error

// errNeverDials is what a front returns if anything makes it dial (a Conn
// taken from the front itself, for instance).
var errNeverDials = errors.New("rediskit: the routing client never dials")

// NewFront returns the front client. opt describes it: Addr names it, and
// the timeouts are what the front's Options() reports (they should describe
// the clients work is routed to). NewFront sets the fields that make it a
// front: rediskit's inner-client policy (package internal/redisopt: no
// retries, context deadlines on sockets, no CLIENT SETINFO) and a dialer
// that refuses. The front's
// only hook sends every command to process and every pipeline and
// transaction to pipeline, and never calls the next hook.
func NewFront(opt *redis.Options, process ProcessFunc, pipeline PipelineFunc) *redis.Client {
	o := *opt
	redisopt.Inner(&o)
	o.Dialer = func(context.Context, string, string) (net.Conn, error) { return nil, errNeverDials }
	c := redis.NewClient(&o)
	c.AddHook(hook{process: process, pipeline: pipeline})
	return c
}

type hook struct {
	process  ProcessFunc
	pipeline PipelineFunc
	// With NewAutoFront: batch runs the batches of the front's
	// auto-pipeliners, and built is set once the front's own hook chain
	// has been built.
	batch PipelineFunc
	built *atomic.Bool
}

func (h hook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h hook) ProcessHook(redis.ProcessHook) redis.ProcessHook { return redis.ProcessHook(h.process) }

func (h hook) ProcessPipelineHook(redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	// go-redis asks a hook for its pipeline function when it builds the
	// client's hook chain (AddHook), which Pipeline, Pipelined and
	// TxPipelined then use, and again for each batch of an auto-pipeliner
	// (withProcessPipelineHook, go-redis v9.23): only an auto front's
	// batches come after its chain was built.
	if h.built != nil && h.built.Load() {
		return redis.ProcessPipelineHook(h.batch)
	}
	// The same hook serves pipelines and transactions: go-redis hands
	// transactions over wrapped in MULTI ... EXEC.
	return redis.ProcessPipelineHook(h.pipeline)
}

// NewAutoFront is NewFront for the client's auto-pipeliners: a front
// whose AutoPipeline and AsyncAutoPipeline are go-redis's, and whose
// auto-pipelined batches go to batch, as independent commands (each to be
// routed on its own), while its Pipeline, Pipelined and TxPipelined go to
// pipeline as on any front. No hook may be added to it (AddHook would
// rebuild its chain, which then could not tell the two apart): the routed
// client's own hooks are on the clients work is routed to.
func NewAutoFront(opt *redis.Options, process ProcessFunc, pipeline, batch PipelineFunc) *redis.Client {
	o := *opt
	redisopt.Inner(&o)
	o.Dialer = func(context.Context, string, string) (net.Conn, error) { return nil, errNeverDials }
	c := redis.NewClient(&o)
	built := &atomic.Bool{}
	c.AddHook(hook{process: process, pipeline: pipeline, batch: batch, built: built})
	built.Store(true)
	return c
}

// IsTx reports whether cmds is a transaction as go-redis hands it to a
// pipeline hook: MULTI, the queued commands, EXEC.
func IsTx(cmds []redis.Cmder) bool {
	return len(cmds) >= 2 && cmds[0].Name() == "multi" && cmds[len(cmds)-1].Name() == "exec"
}

// Target is a client work can run on: any go-redis client
// (redis.UniversalClient) has these methods.
type Target interface {
	Process(ctx context.Context, cmd redis.Cmder) error
	Pipelined(ctx context.Context, fn func(redis.Pipeliner) error) ([]redis.Cmder, error)
	TxPipelined(ctx context.Context, fn func(redis.Pipeliner) error) ([]redis.Cmder, error)
}

// Run runs work on t: a command (cmd), or a pipeline or transaction (cmds,
// as the front's pipeline hook received them: a transaction's MULTI and
// EXEC are left to t, which adds its own). The commands get their results
// and errors as if the caller had run them on t; Run returns the error
// go-redis reports.
func Run(ctx context.Context, t Target, cmd redis.Cmder, cmds []redis.Cmder) error {
	switch {
	case cmd != nil:
		return t.Process(ctx, cmd)
	case IsTx(cmds):
		_, err := t.TxPipelined(ctx, func(p redis.Pipeliner) error {
			for _, q := range cmds[1 : len(cmds)-1] {
				_ = p.Process(ctx, q)
			}
			return nil
		})
		return err
	default:
		_, err := t.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, q := range cmds {
				_ = p.Process(ctx, q)
			}
			return nil
		})
		return err
	}
}

// SetErrs sets err on cmd or on every command of cmds (nil clears them
// before work is run again).
func SetErrs(cmd redis.Cmder, cmds []redis.Cmder, err error) {
	if cmd != nil {
		cmd.SetErr(err)
	}
	for _, q := range cmds {
		q.SetErr(err)
	}
}

// UnsupportedError reports a go-redis method a routed client does not
// offer, and what to use instead. Its package (sentinel, multidb) names it
// as its own, and it matches that package's ErrUnsupported.
type UnsupportedError struct {
	// Client names the client ("sentinel.Client").
	Client string
	// Method is the go-redis method refused.
	Method string
	// Why says why; Instead what to use.
	Why, Instead string
	// Match is the package's ErrUnsupported.
	Match error
}

func (e *UnsupportedError) Error() string {
	msg := e.Client + "." + e.Method + " is not supported: " + e.Why
	if e.Instead != "" {
		msg += "; use " + e.Instead
	}
	return msg
}

// Is makes errors.Is(err, the package's ErrUnsupported) true.
func (e *UnsupportedError) Is(target error) bool { return target == e.Match }

// WithTimeout returns a front (see NewFront) whose every call runs with a
// deadline of d on top of its context, as go-redis's Client.WithTimeout
// bounds each call by its read and write timeouts: a routed client's
// WithTimeout, whose calls are routed as the client's are. Blocking
// commands (blocking reports them) get no deadline of their own: their
// wait is their own timeout, as go-redis extends its read timeout for
// them. opt describes the front (Options(); its timeouts are set to d).
func WithTimeout(opt *redis.Options, d time.Duration, blocking func(redis.Cmder) bool, process ProcessFunc, pipeline PipelineFunc) *redis.Client {
	o := *opt
	o.ReadTimeout, o.WriteTimeout = d, d
	bounded := func(ctx context.Context) (context.Context, context.CancelFunc) {
		return context.WithTimeout(ctx, d)
	}
	return NewFront(&o, func(ctx context.Context, cmd redis.Cmder) error {
		if blocking(cmd) {
			return process(ctx, cmd)
		}
		ctx, cancel := bounded(ctx)
		defer cancel()
		return process(ctx, cmd)
	}, func(ctx context.Context, cmds []redis.Cmder) error {
		ctx, cancel := bounded(ctx)
		defer cancel()
		return pipeline(ctx, cmds)
	})
}

type internalKey struct{}

// Internal marks ctx as carrying a routed client's own work (its health
// checks, probes) on a client the caller's hooks are on: UserHook passes
// such calls by, InternalHook sees only them.
func Internal(ctx context.Context) context.Context {
	return context.WithValue(ctx, internalKey{}, true)
}

// IsInternal reports whether ctx was marked by Internal.
func IsInternal(ctx context.Context) bool { return ctx.Value(internalKey{}) != nil }

// UserHook wraps a caller's hook so that it sees the caller's work only:
// commands and pipelines run with a context marked Internal go straight
// to the next hook. Dials are passed to it as they are.
func UserHook(h redis.Hook) redis.Hook { return filteredHook{h: h, internal: false} }

// InternalHook wraps a hook so that it sees only the calls made with a
// context marked Internal.
func InternalHook(h redis.Hook) redis.Hook { return filteredHook{h: h, internal: true} }

type filteredHook struct {
	h        redis.Hook
	internal bool // which calls h sees
}

func (f filteredHook) DialHook(next redis.DialHook) redis.DialHook {
	if f.internal {
		return next
	}
	return f.h.DialHook(next)
}

func (f filteredHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	hooked := f.h.ProcessHook(next)
	return func(ctx context.Context, cmd redis.Cmder) error {
		if IsInternal(ctx) == f.internal {
			return hooked(ctx, cmd)
		}
		return next(ctx, cmd)
	}
}

func (f filteredHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	hooked := f.h.ProcessPipelineHook(next)
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if IsInternal(ctx) == f.internal {
			return hooked(ctx, cmds)
		}
		return next(ctx, cmds)
	}
}

// Why a routed client refuses the *redis.Client methods it cannot route,
// and what to use instead: one wording for every routed client (each
// wraps it in its own ErrUnsupported error).
const (
	RefuseWait              = "WAIT counts the acknowledged writes of its own connection, and calls run on connections of the client's choosing"
	RefuseWaitAOF           = "WAITAOF counts the fsynced writes of its own connection, and calls run on connections of the client's choosing"
	RefusePushNotifications = "Subscribe for pub/sub"
)

// autoFronts are a routed client's auto-pipeliners (see Front):
// go-redis's, made on an auto front (NewAutoFront) on first use, whose
// batches are taken apart by RunIndependent into the client's single
// commands. The zero value is
// ready once Make is set; Close closes the front (and go-redis closes its
// auto-pipeliners with it), and none is made after.
type autoFronts struct {
	// Make returns the auto front; called once.
	Make func() *redis.Client

	once  sync.Once
	front *redis.Client
}

func (a *autoFronts) get() (*redis.Client, error) {
	a.once.Do(func() { a.front = a.Make() })
	if a.front == nil {
		return nil, redis.ErrClosed
	}
	return a.front, nil
}

// AutoPipeline is go-redis's AutoPipeline on the auto front.
func (a *autoFronts) AutoPipeline(opts *redis.AutoPipelineOptions) (*redis.AutoPipeliner, error) {
	f, err := a.get()
	if err != nil {
		return nil, err
	}
	return f.AutoPipelineWithOptions(opts)
}

// AsyncAutoPipeline is go-redis's AsyncAutoPipeline on the auto front.
func (a *autoFronts) AsyncAutoPipeline(opts *redis.AutoPipelineOptions) (*redis.AutoPipeliner, error) {
	f, err := a.get()
	if err != nil {
		return nil, err
	}
	return f.AsyncAutoPipelineWithOptions(opts)
}

// Close closes the auto front, if it was made, draining its
// auto-pipelined batches (which still run on the routed client's nodes:
// close this first).
func (a *autoFronts) Close() {
	a.once.Do(func() {})
	if a.front != nil {
		_ = a.front.Close()
	}
}

// Refusals builds the *redis.Client methods every routed client refuses
// (Wait, WaitAOF, RegisterPushNotificationHandler), each failing with the
// client's own *UnsupportedError: one implementation for sentinel,
// cluster and multidb, which differ only in what they advise instead.
type Refusals struct {
	// Client names the routed client ("sentinel.Client"); Match is its
	// ErrUnsupported.
	Client string
	Match  error
	// WaitInstead says what to use instead of WAIT and WAITAOF; Nodes
	// names where push notifications arrive ("the data nodes'").
	WaitInstead, Nodes string
}

func (r Refusals) refuse(method, why, instead string) *UnsupportedError {
	return &UnsupportedError{Client: r.Client, Method: method, Why: why, Instead: instead, Match: r.Match}
}

// Wait is a WAIT command that fails with the refusal, unsent.
func (r Refusals) Wait(ctx context.Context, numReplicas int, timeout time.Duration) *redis.IntCmd {
	cmd := redis.NewIntCmd(ctx, "wait", numReplicas, int(timeout/time.Millisecond))
	cmd.SetErr(r.refuse("Wait", RefuseWait, r.WaitInstead))
	return cmd
}

// WaitAOF is a WAITAOF command that fails with the refusal, unsent.
func (r Refusals) WaitAOF(ctx context.Context, numLocal, numReplicas int, timeout time.Duration) *redis.IntSliceCmd {
	cmd := redis.NewIntSliceCmd(ctx, "waitaof", numLocal, numReplicas, int(timeout/time.Millisecond))
	cmd.SetErr(r.refuse("WaitAOF", RefuseWaitAOF, r.WaitInstead))
	return cmd
}

// RegisterPushNotificationHandler is the refusal of a push handler.
func (r Refusals) RegisterPushNotificationHandler() error {
	return r.refuse("RegisterPushNotificationHandler", "push notifications arrive on "+r.Nodes+" own connections", RefusePushNotifications)
}
