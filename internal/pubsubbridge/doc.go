// Package pubsubbridge gives a client that routes its commands among
// several databases (multidb) subscriptions that follow the routing: the
// caller's go-redis PubSub talks RESP2 over an in-memory pipe to a bridge,
// which subscribes through the chosen database's own client and relays
// what that PubSub receives. When the owner moves to another database it
// stops the bridges bound elsewhere: the caller's PubSub sees its
// connection close with an error matching routing.ErrSwitched, reconnects
// (to a bridge on the new database) and subscribes again, as go-redis's
// PubSub does after any connection loss. Messages published during the
// switch can be lost.
//
// A database client that follows failovers of its own (a Sentinel client,
// a cluster client) does so for the bridge's PubSub as well, without the
// router's involvement.
//
// The bridge speaks the little RESP2 a go-redis PubSub needs (resp.go):
// HELLO, the (un)subscribe commands of the three kinds, PING and CLIENT
// SETNAME; anything else gets an error reply.
package pubsubbridge
