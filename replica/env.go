package replica

import (
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"
)

// Topology is what a client tells its replica selector: the master and the
// replicas Sentinel reports healthy and ROLE confirms (a replica with a
// connected link to a master).
type Topology struct {
	Master   string
	Replicas []string
}

// Env is what a client gives a selector that implements
// Bind(Env): everything needed to probe the deployment's nodes on
// dedicated connections and to act on an election.
type Env struct {
	// MasterName and Sentinels identify the deployment; selectors of
	// clients of the same deployment in one process share one prober.
	MasterName string
	Sentinels  []string
	// NodeOptions returns go-redis options for a connection to a data node
	// with the client's credentials and TLS settings, and no retries.
	NodeOptions func(addr string) *redis.Options
	// Evict asks the client to move its pooled connections off a replica:
	// idle ones are closed at once, busy ones when released. A selector
	// calls it for the replicas that leave its choice, so reads move within
	// one request instead of staying pinned to pooled connections.
	Evict func(addr string)
	// Logger is the client's logger.
	Logger *slog.Logger
	// ReplicaStateFromMaster reads the replicas' links and offsets from
	// their master's INFO replication, one command per master and round,
	// instead of one INFO replication per replica: a replica's link is up
	// while its master lists it online and heard from it within
	// MasterSideLinkTimeout, and its offset is the one it last acknowledged
	// (replicas acknowledge once a second, so lag is judged up to a second
	// late). The prober of a deployment takes the mode of the first
	// selector bound to it. Package cluster sets it, where a shard's
	// master and the map say which replicas follow whom.
	ReplicaStateFromMaster bool
}

// MasterSideLinkTimeout is how long a master may go without hearing from a
// replica (REPLCONF ACK, sent every second) before, with
// Env.ReplicaStateFromMaster, the replica's link counts as down: three
// acknowledgements missed, so one late on a busy machine is not a fault.
const MasterSideLinkTimeout = 3 * time.Second
