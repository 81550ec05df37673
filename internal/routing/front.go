package routing

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/push"
)

// Front is what every routed client (sentinel, cluster, multidb, and the
// standalone client, which is sentinel's) embeds to be a go-redis client:
// the never-dialling front (NewFront), whose command methods run through
// the client's routing, and, once for all of them, the *redis.Client
// methods that would misbehave on a front that never dials: each works as
// in go-redis on the node the client routes to (Options, NodeAddress,
// Conn, EphemeralConn), on the routing (WithTimeout, the auto-pipeliners,
// PoolStats over the nodes), or refuses with the client's
// *UnsupportedError (Wait, WaitAOF, RegisterPushNotificationHandler).
//
// Embedded as a field, its methods shadow the front's (they are one level
// shallower), so a routed client is a topology (a snapshot source and its
// rules, in Spec) plus what it really does differently (Watch, AddHook,
// Subscribe, ...), which it defines itself. testkit.CheckFrontMethods
// checks that every method of *redis.Client is one or the other.
type Front struct {
	// Client is the front: the client's process and pipeline hooks are
	// its only hook.
	*redis.Client

	spec  FrontSpec
	autos autoFronts
}

// FrontSpec is what a routed client tells its Front.
type FrontSpec struct {
	// Options describe the front: Addr names the client
	// ("sentinel/mymaster"), the timeouts those of the node clients (what
	// Options() reports before any node is known).
	Options *redis.Options
	// Process and Pipeline run a command, and a pipeline or transaction,
	// through the client's routing.
	Process  ProcessFunc
	Pipeline PipelineFunc
	// Blocking reports the commands that keep their own wait under
	// WithTimeout (the client's classifier).
	Blocking func(redis.Cmder) bool
	// AutoPipelineOptions are go-redis's options for the auto-pipeliners
	// (nil: those in Options, else go-redis's defaults).
	AutoPipelineOptions *redis.AutoPipelineOptions
	// Refusals say how the client refuses Wait, WaitAOF and push handlers.
	Refusals Refusals
	// Node returns the client of the node the single-node methods
	// (Options, NodeAddress, Conn, EphemeralConn) speak of — the master, a
	// cluster's first master, the active database — or nil when there is
	// none yet (or it is not a single node's client): those methods then
	// fall back to the front, whose Conn fails every call with a clear
	// error. wait is true for Conn and EphemeralConn, which may wait
	// (bounded by the client) for a first node to be known.
	Node func(wait bool) NodeClient
	// Pools returns the pool statistics of every node client that carries
	// the caller's work; PoolStats sums them.
	Pools func() []*redis.PoolStats
}

// NodeClient is a client of one node (a *redis.Client, or a routed client
// that stands for one, such as a sentinel.Client in a multidb database).
type NodeClient interface {
	Options() *redis.Options
	Conn() *redis.Conn
	EphemeralConn() *redis.Conn
}

// NewRoutedFront returns a Front for a routed client.
func NewRoutedFront(spec FrontSpec) *Front {
	f := &Front{spec: spec, Client: NewFront(spec.Options, spec.Process, spec.Pipeline)}
	f.autos.Make = func() *redis.Client {
		opt := f.Client.Options()
		if spec.AutoPipelineOptions != nil {
			opt.AutoPipelineOptions = spec.AutoPipelineOptions
		}
		return NewAutoFront(opt, spec.Process, spec.Pipeline, func(ctx context.Context, cmds []redis.Cmder) error {
			// An auto-pipeliner's batch: independent commands, each by
			// the single-command path.
			return RunIndependent(ctx, cmds, spec.Process)
		})
	}
	return f
}

// CloseAutoPipelines closes the auto-pipeliners, draining their batches,
// which still run on the nodes: call it first in the client's Close. None
// is made after.
func (f *Front) CloseAutoPipelines() { f.autos.Close() }

// CloseFront closes the front itself (call it last).
func (f *Front) CloseFront() error { return f.Client.Close() }

// node is the spec's node, or nil.
func (f *Front) node(wait bool) NodeClient {
	if f.spec.Node == nil {
		return nil
	}
	return f.spec.Node(wait)
}

// WithTimeout returns a client whose calls are routed as the client's are,
// each bounded by timeout (as go-redis's WithTimeout bounds a call by its
// read and write timeouts; blocking commands keep their own wait). It
// shares the client's topology, connections and hooks; closing it closes
// only itself.
func (f *Front) WithTimeout(timeout time.Duration) *redis.Client {
	return WithTimeout(f.Client.Options(), timeout, f.spec.Blocking, f.spec.Process, f.spec.Pipeline)
}

// Options returns the go-redis options (a copy) of the node client the
// client's work goes to now (the master's, the active database's, a
// cluster master's): the data-node settings (credentials, database, TLS,
// timeouts, pool) the client runs with. Before a node is known, the
// front's, whose Addr names the client.
func (f *Front) Options() *redis.Options {
	if n := f.node(false); n != nil {
		o := *n.Options()
		return &o
	}
	return f.Client.Options()
}

// NodeAddress returns the address of the node Options speaks of ("" while
// there is none).
func (f *Front) NodeAddress() string {
	if n := f.node(false); n != nil {
		return n.Options().Addr
	}
	return ""
}

// Conn returns a connection to the node Options speaks of. It is pinned
// to that node and does not follow the topology (after a failover its
// writes fail with READONLY or a connection error); prefer the client's
// own methods. With no node known, a Conn of the front, which fails every
// call with a clear error.
func (f *Front) Conn() *redis.Conn {
	if n := f.node(true); n != nil {
		return n.Conn()
	}
	return f.Client.Conn()
}

// EphemeralConn is Conn on a connection discarded, not pooled, when
// closed (go-redis's EphemeralConn).
func (f *Front) EphemeralConn() *redis.Conn {
	if n := f.node(true); n != nil {
		return n.EphemeralConn()
	}
	return f.Client.EphemeralConn()
}

// PoolStats sums the pool statistics of every node client that carries
// the caller's work, as go-redis's ClusterClient sums its nodes'.
func (f *Front) PoolStats() *redis.PoolStats {
	if f.spec.Pools == nil {
		return &redis.PoolStats{}
	}
	return SumPoolStats(f.spec.Pools()...)
}

// Wait is refused: WAIT counts the replicas that acknowledged the writes
// of the connection it runs on, and the client runs each call on a
// connection of its choosing, so no WAIT could speak for the caller's
// writes. The refusal says what to use instead (durable writes).
func (f *Front) Wait(ctx context.Context, numReplicas int, timeout time.Duration) *redis.IntCmd {
	return f.spec.Refusals.Wait(ctx, numReplicas, timeout)
}

// WaitAOF is refused, as Wait is.
func (f *Front) WaitAOF(ctx context.Context, numLocal, numReplicas int, timeout time.Duration) *redis.IntSliceCmd {
	return f.spec.Refusals.WaitAOF(ctx, numLocal, numReplicas, timeout)
}

// RegisterPushNotificationHandler is refused: push notifications arrive
// on the nodes' own connections, which the client opens and closes as
// the topology changes.
func (f *Front) RegisterPushNotificationHandler(string, push.NotificationHandler, bool) error {
	return f.spec.Refusals.RegisterPushNotificationHandler()
}

// AutoPipeline returns go-redis's blocking auto-pipeliner over the routed
// client: command calls on it (ap.Get, ap.Set, ...) block until done, and
// concurrent ones share round trips. Each command of its batches is routed
// on its own and is held, re-run or refused by the client's rules, as a
// lone command is; underneath, the commands that go to one node are sent
// together (see the client's Config.AutoPipeline). Pipelines and
// transactions made on it run as on the client, whole. go-redis runs its
// batches without the callers' contexts (deadlines, WithReadFrom,
// WithDurable): the client's Config applies, and the node clients'
// timeouts bound each command. The instance is go-redis's, cached by it
// and closed by the client's Close. To batch ordinary calls with the
// callers' contexts intact, set Config.AutoPipeline instead.
func (f *Front) AutoPipeline() (*redis.AutoPipeliner, error) {
	return f.autos.AutoPipeline(nil)
}

// AutoPipelineWithOptions is AutoPipeline with go-redis's options (the
// first call's win, as in go-redis).
func (f *Front) AutoPipelineWithOptions(opts *redis.AutoPipelineOptions) (*redis.AutoPipeliner, error) {
	return f.autos.AutoPipeline(opts)
}

// AsyncAutoPipeline returns go-redis's deferred auto-pipeliner over the
// routed client (calls return at once, results block until done), with
// AutoPipeline's routing and failure rules.
func (f *Front) AsyncAutoPipeline() (*redis.AutoPipeliner, error) {
	return f.autos.AsyncAutoPipeline(nil)
}

// AsyncAutoPipelineWithOptions is AsyncAutoPipeline with go-redis's
// options.
func (f *Front) AsyncAutoPipelineWithOptions(opts *redis.AutoPipelineOptions) (*redis.AutoPipeliner, error) {
	return f.autos.AsyncAutoPipeline(opts)
}
