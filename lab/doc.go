// Package lab starts real Redis, Sentinel and Cluster topologies on
// loopback for tests and drills, with latency, faults and partitions.
//
// A lab is a standalone server, a master with replicas, the same monitored
// by Sentinel, or a Redis Cluster, each node behind a proxy that can add
// latency, black-hole or reset its connections.
//
// It runs the redis-server and redis-sentinel binaries found on PATH (Redis
// 7.0 or newer; on Debian: apt-get install redis-server redis-sentinel
// redis-tools), or valkey-server and valkey-sentinel (Valkey 7.2 or newer;
// on Debian 12: apt-get install -t bookworm-backports valkey-server
// valkey-sentinel valkey-tools, or make valkey). Config.Server chooses; its
// zero value takes the choice from the environment variable
// REDISKIT_LAB_SERVER ("redis", the default, or "valkey"), which is how
// make test runs the whole suite on each server. Lab.ServerVersion says
// what runs ("Valkey 8.0.1"); a test whose assertion depends on the server
// names it. The configuration the lab writes is the same for both: every
// directive it uses (bind-source-addr, replica-announce-*, the TLS and ACL
// lines, sentinel announce-*, known-replica, known-sentinel, myid) means
// the same on Redis 7.0 and Valkey 8.0. Each lab lives in its own temporary directory with its own
// free ports, so tests can run in parallel; nothing relies on a system Redis
// service.
//
// The lab runs on Linux, macOS and the other Unix systems; on Windows, Start
// and NewProxy return an error (run it under WSL). On Linux and FreeBSD the
// kernel also stops the servers if the process that started them dies
// without calling Close (a parent-death signal); elsewhere such servers are
// left running, and are stopped by their PID.
//
// # Starting a lab
//
// In a test, New starts the lab, fails the test when it cannot, and stops
// every process when the test ends (printing the servers' logs first if the
// test failed):
//
//	l := lab.New(t, lab.Sentinel(2)) // master, 2 replicas, 3 sentinels
//	client := l.Node(0).NewClient()
//
// Outside tests, Start and Close do the same. Config describes the topology:
// replicas, sentinels (default name "mymaster", quorum a majority), a data
// node password or ACL user, a separate sentinel password, TLS with a
// throwaway CA (TLSFiles), extra redis.conf lines for every node or one.
//
// # Latency and faults
//
// With Config.Proxy (implied by any NodeConfig.Latency) every data node sits
// behind its own TCP proxy and announces the proxy's address
// (replica-announce-ip/port), and the sentinels monitor the master through
// its proxy. What Sentinel hands to clients, what replicas replicate
// through, and what a test's client dials is therefore the proxied address,
// so injected faults affect everyone the way a network fault would:
//
//	l.Node(2).SetLatency(42 * time.Millisecond) // added round trip
//	l.Node(1).BlackHole()                       // accepts, never answers
//	l.Node(1).Restore()
//	l.Node(1).ResetConnections()                // TCP resets
//
// Each direction is delayed by half the latency, chunk by chunk, in order.
// On Linux the proxy's delays run on a kernel timerfd that Go's poller
// waits on, so a chunk is written within about 0.15 ms of its due time
// (p99, BENCHMARKS.md); Go's runtime timers, the fallback elsewhere, can
// fire up to a millisecond late in an idle process, which shows in
// latency percentiles.
//
// Process faults are sent by PID: Kill (its proxy then refuses connections,
// as a dead server would), Restart, Pause (SIGSTOP) and Resume.
//
// # Network partitions
//
// On 127.0.0.1 a proxy cannot tell who is talking. With Config.Partitions
// (which implies Proxy) every process gets an address of its own: node0
// 127.0.0.2, node1 127.0.0.3, and so on, then the sentinels. It binds that
// address and connects from it (bind-source-addr: Redis 7.0 and its
// Sentinel connect from 127.0.0.1 whatever they bind, unless told), and
// sentinels, too, sit behind a proxy on their address and announce it
// (sentinel announce-ip/port). Every connection between lab processes is
// thus made to a proxy that knows the caller by its address. Ports are
// picked free on each address; labs running side by side reuse the same
// addresses, which is harmless since they never talk to each other. The
// data nodes run with a 3 s repl-timeout (DefaultPartitionReplTimeout), so
// that a silent link is noticed in seconds, not Redis's 60.
//
// A test's own clients become endpoints with NewClientEndpoint: each has
// an address of its own, and its Dial (a net.Dialer with LocalAddr) is a
// go-redis Dialer. Partition cuts the traffic between endpoints of
// different groups, in both directions; endpoints in no group, and clients
// that connect from 127.0.0.1 (the lab's own admin connections,
// Node.NewClient, the URL's), still reach everyone. Refuse resets the
// connections across at once, open and new; Drop swallows everything
// across and closes nothing, as a real partition does, so only timeouts
// tell. Heal lets everything through again, resetting the connections a
// Drop swallowed bytes of:
//
//	l := lab.New(t, lab.Config{Replicas: 2, Sentinels: 3, Partitions: true})
//	app, _ := l.NewClientEndpoint("app")
//	s := l.Sentinels()
//	// the master and app on one side, the replicas and the sentinels on the other
//	err := l.Partition(lab.Drop,
//		[]lab.Endpoint{l.Node(0), app},
//		[]lab.Endpoint{l.Node(1), l.Node(2), s[0], s[1], s[2]})
//	// ... the sentinels fail the master over; app still writes to the old one
//	err = l.Heal() // Sentinel turns the old master into a replica
//
// A Partition replaces the previous one. Node, SentinelNode and
// ClientEndpoint are Endpoints; Lab.Endpoints lists them. Node.BlackHole
// and the other per-node faults work on their own, next to partitions.
//
// # Failovers and their timelines
//
// Failover sends SENTINEL FAILOVER and returns once every sentinel names the
// new master and ROLE on it says master. The lab subscribes to every
// sentinel's events, so a test can see the whole timeline (Events,
// WaitEvent, FailoverResult.SwitchMaster). Two facts of Sentinel a failover
// test must reckon with, and which the lab shows rather than hides:
//
//   - the sentinel that leads a manual failover publishes +switch-master
//     about one second after the others;
//   - the old master keeps accepting writes until Sentinel demotes it,
//     after the new master was announced. WaitSettled waits for that.
//
// The lab's sentinels use short timings so failovers take seconds: see
// DefaultDownAfter, DefaultFailoverTimeout, DefaultSentinelInfoPeriod and
// DefaultSentinelPublishPeriod; set Redis's own values in Config to
// reproduce production timelines.
//
// # Redis Cluster
//
// Config.Shards (or Cluster(shards, replicas)) starts a cluster: Shards
// masters with Replicas replicas each, the 16384 slots split evenly in
// shard order, cluster-node-timeout 1 s (DefaultClusterNodeTimeout; Redis's
// own is 15 s), so a failed master is replaced in two to three seconds.
// Every node has two proxies, one for its client port and one for its
// cluster bus, and announces both (cluster-announce-ip, -port or -tls-port,
// -bus-port): CLUSTER SHARDS, CLUSTER SLOTS, MOVED and ASK hand clients the
// proxies' addresses, and the nodes' own bus traffic crosses the bus
// proxies, so Node.SetLatency, BlackHole, ResetConnections, Kill and
// Partition reach the bus as they reach clients. A node's proxies carry
// what others send to it, not what it sends: a black-holed node's own bus
// messages still reach the others, which then never mark it failed; cut
// it off with Partition (Config.Partitions) for that. The lab builds the
// cluster itself (CLUSTER SET-CONFIG-EPOCH, ADDSLOTSRANGE, MEET between
// every pair of nodes, REPLICATE), not with redis-cli, and Start returns
// once every node reports cluster_state:ok and all agree on the slot map,
// each shard's master and its replicas (ClusterReady), and every replica
// has acknowledged its master's offset. Redis keeps a new master's
// cluster_state at fail for its first two seconds, so a cluster takes
// about 2.1 s to start (BENCHMARKS.md). Replica migration is off
// (cluster-allow-replica-migration no): shards keep the nodes the test
// gave them.
//
// Nodes are numbered in shard order (node0..nodeR the first shard, node0
// its first master) and keep their shard (Node.Shard, Lab.ShardNodes)
// whatever their role. The operations wait until every running node
// agrees, bounded by their context:
//
//   - ClusterFailover (CLUSTER FAILOVER, with FailoverForce or
//     FailoverTakeover its FORCE and TAKEOVER forms) on a shard's replica,
//     or Node.ClusterFailover on a chosen one;
//   - WaitPromotion after Node.Kill, Pause, or a partition that leaves
//     the master in a minority: the cluster's own failover;
//   - BeginSlotMigration, SlotMigration.MoveKeys and Finish move slots
//     step by step (IMPORTING and MIGRATING, MIGRATE, SETSLOT NODE), so a
//     test can hold a slot mid-migration and see ASK; MigrateSlots does
//     it at once;
//   - AddShard and RemoveShard (its slots and keys moved to the others,
//     its nodes forgotten everywhere and stopped);
//   - ShardMaster, SlotOwner, Node.ClusterShards, Node.Role, Server.Info
//     read the state.
//
// ClusterAddrs are seeds for a cluster client and ClusterOptions go-redis
// options for one; Lab.URL is go-redis's cluster URL form
// (redis://host:port?addr=host:port&...). Passwords, ACL users, TLS (the
// bus and replication too: tls-cluster, tls-replication), ExtraConfig and
// the server choice work as for the other topologies. With Partitions a
// cluster's nodes take addresses 127.0.0.2 onwards (room for 128 nodes),
// its client endpoints the ones after.
//
// # Clients
//
// Node.Options gives go-redis options for a node with the lab's credentials
// and TLS settings and no retries of any kind; Lab.URL a redis://,
// redis+sentinel:// or cluster URL. Node.Do runs admin commands on the node's own port,
// bypassing its proxy, so injected faults and partitions do not disturb a
// test's bookkeeping. ClientEndpoint.Options and NewClient give the same
// clients, connecting from an endpoint's address.
package lab
