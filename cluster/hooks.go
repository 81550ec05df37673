package cluster

import (
	"sync"

	"github.com/redis/go-redis/v9"
)

// callerClients are the go-redis clients that carry the caller's work
// (each node's client, its replica-read client, the subscription clients),
// and the functions of OnNewNode, applied to each of them, present and
// future. The clients of the client's own checks (the nodes' control
// clients) are not among them. A replica-read client is forgotten when it
// closes, so the set is bounded by the nodes and subscribed slots.
type callerClients struct {
	mu      sync.Mutex
	clients map[*redis.Client]struct{}
	fns     []func(*redis.Client)
}

// made registers a new client and applies every function to it.
func (cc *callerClients) made(rc *redis.Client) *redis.Client {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.clients == nil {
		cc.clients = map[*redis.Client]struct{}{}
	}
	cc.clients[rc] = struct{}{}
	for _, fn := range cc.fns {
		fn(rc)
	}
	return rc
}

func (cc *callerClients) forget(rc *redis.Client) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	delete(cc.clients, rc)
}

func (cc *callerClients) onNewNode(fn func(*redis.Client)) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.fns = append(cc.fns, fn)
	for rc := range cc.clients {
		fn(rc)
	}
}

// OnNewNode calls fn with the go-redis client of every node the client
// sends the caller's work to (a node's client for the commands it serves
// as a master, its READONLY client for replica reads, the clients
// subscriptions dial through), those it has now and every one it makes
// later, as go-redis's ClusterClient does. It is the way to instrument
// the nodes:
//
//	c.OnNewNode(func(rc *redis.Client) { _ = redisotel.InstrumentTracing(rc) })
//
// The control clients of the client's own checks (CLUSTER SHARDS, ROLE)
// are not passed. fn is called on the caller's goroutine for the clients
// there are now, and later on the client's goroutines as clients appear:
// it must be safe for concurrent use, must not block, and must not call
// the client.
func (c *Client) OnNewNode(fn func(*redis.Client)) { c.nodes.clients.onNewNode(fn) }

// AddHook adds a go-redis hook to the client of every node, present and
// future, that OnNewNode reaches, so it sees each command on the node that
// runs it, and each connection dialled for the caller's work,
// subscriptions included. (go-redis's AddHook on the client itself would
// never be called: the client's own routing hook does not call the next
// one.)
func (c *Client) AddHook(h redis.Hook) {
	c.OnNewNode(func(rc *redis.Client) { rc.AddHook(h) })
}
