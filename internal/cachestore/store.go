package cachestore

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/OneOfOne/xxhash"
)

// Store holds cached replies, per node and Redis key, within a bound in
// bytes. It knows nothing of commands or connections: the client reserves
// a read before sending it (Reserve), fills the entry with its reply
// (Fill) unless an invalidation came first, and serves it (Get) while the
// node's tracking is unbroken since the fill. Safe for concurrent use.
type Store struct {
	// shards come first: a Store is a large allocation, page-aligned, so
	// each shard starts on a cache line of its own (see shard).
	shards   [numShards]shard
	maxTTL   time.Duration
	shardMax int64 // bytes a shard may hold
	bytes    atomic.Int64
	counts   Counts
}

// numShards spreads the locks: a hit takes its shard's mutex (to look the
// key up and mark its entry used), so at 256 readers on random keys two
// rarely meet.
const numShards = 64

// entryOverhead is what an entry costs besides its key's and value's
// bytes: the entry (80 bytes), its key's state (48), the shard map's slot
// (about 65 at the map's usual load), the boxed reply and the string
// headers, and the rounding of allocations to their size class. Measured
// (TestCacheMemoryBound, package sentinel): 309 bytes of heap an entry of
// a 16-byte value and an 11-byte key, 1,280 of a 1,000-byte value; so that
// a cache of many small replies stays within its bound too.
const entryOverhead = 280

// Counts are a store's counters since it was made.
type Counts struct {
	StaleServed                 atomic.Uint64
	Fills, FillsRaced           atomic.Uint64 // FillsRaced: an invalidation or a flush came between Reserve and Fill
	Invalidations, Evictions    atomic.Uint64 // Invalidations: of keys that had entries or reads in flight
	TooLarge                    atomic.Uint64 // replies larger than a shard's share of the bound, not cached
	FlushedEntries, Expirations atomic.Uint64
	// Flushes by cause: a node's entries ended at once (epoch ended, or
	// purged by the server's flush).
	FlushesLost, FlushesSilent, FlushesServer, FlushesTopology atomic.Uint64
}

// flushed counts a flush of cause.
func (k *Counts) flushed(cause FlushCause) {
	switch cause {
	case FlushConnectionLost:
		k.FlushesLost.Add(1)
	case FlushHeartbeat:
		k.FlushesSilent.Add(1)
	case FlushServer:
		k.FlushesServer.Add(1)
	case FlushTopology:
		k.FlushesTopology.Add(1)
	}
}

// NewStore returns a store that holds at most maxBytes (estimated: keys,
// values as their fillers size them, and a fixed overhead an entry) and
// keeps no entry longer than maxTTL.
func NewStore(maxBytes int64, maxTTL time.Duration) *Store {
	s := &Store{maxTTL: maxTTL, shardMax: max(maxBytes/numShards, 1)}
	for i := range s.shards {
		s.shards[i].keys = map[uint64]*keyState{}
	}
	return s
}

// Node is one server's part of a store. Its entries are served while its
// epoch is the one they were filled in: the tracker ends the epoch
// (Flush) whenever invalidations may have been missed, which makes every
// entry filled before it unconfirmed at once, without walking them.
type Node struct {
	addr  string
	seed  uint64 // of its keys' hashes: the same key on two nodes hashes apart
	epoch atomic.Uint64
	// until is when the node's tracking stops being known alive (on the
	// store's clock; notAlive: not alive): the tracker moves it forward
	// with every message or heartbeat reply its invalidation connection
	// reads, so a connection that goes silent stops the node's hits by then.
	until atomic.Int64

	mu sync.Mutex
	// ends are when the latest epochs ended (by epoch % len): a stale
	// entry's age counts from the end of the epoch it was filled in, the
	// last moment it was known current. Older epochs count as ended too
	// long ago to serve.
	ends [epochsKept]epochEnd
}

// epochsKept bounds the ended epochs a node remembers: flushes come with
// lost connections and topology changes, seconds apart at the most.
const epochsKept = 16

type epochEnd struct {
	epoch uint64
	at    time.Time
}

// NewNode returns the part of the cache for the server at addr.
func NewNode(addr string) *Node {
	n := &Node{addr: addr, seed: xxhash.ChecksumString64(addr)}
	n.until.Store(notAlive)
	return n
}

// notAlive is Node.until of a node whose tracking is not known alive.
const notAlive = math.MinInt64

// clockBase is the origin of the store's clock: set once, when the
// package is loaded, and never written after.
var clockBase = time.Now()

// nanotime is the time now on the store's clock: nanoseconds since
// clockBase, on the monotonic clock. The read path's clock read: one read
// of the clock where time.Now makes two (the wall clock's and the
// monotonic one's), which was a tenth of a cache hit's time.
func nanotime() int64 { return int64(time.Since(clockBase)) }

// clock is t on the store's clock.
func clock(t time.Time) int64 { return int64(t.Sub(clockBase)) }

// Addr is the node's address.
func (n *Node) Addr() string { return n.addr }

// Flush ends the node's epoch at now: its entries are no longer served
// fresh (Get); with a MaxStale, GetStale may still serve them.
func (n *Node) Flush(now time.Time) {
	n.mu.Lock()
	old := n.epoch.Add(1) - 1
	n.ends[old%epochsKept] = epochEnd{epoch: old, at: now}
	n.mu.Unlock()
}

// confirm records that the node's tracking is alive until then.
func (n *Node) confirm(until time.Time) { n.until.Store(clock(until)) }

// unconfirm records that the node's tracking is not alive.
func (n *Node) unconfirm() { n.until.Store(notAlive) }

// Confirmed reports whether the node's tracking is known alive at now.
func (n *Node) Confirmed(now time.Time) bool { return clock(now) < n.until.Load() }

// endOf is when epoch ended, or false if it is not one of the latest
// ended.
func (n *Node) endOf(epoch uint64) (time.Time, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if e := n.ends[epoch%epochsKept]; e.epoch == epoch && !e.at.IsZero() {
		return e.at, true
	}
	return time.Time{}, false
}

type nodeKey struct {
	node *Node
	key  string
}

// keyState is one Redis key of one node: its cached replies (one a
// command shape: GET, STRLEN, HGET of a field...) and the reads of it in
// flight. Invalidating the key removes the keyState from its shard; a
// read reserved before then holds the old one, and its Fill finds it gone.
type keyState struct {
	nk nodeKey
	h  uint64 // hash of nk: the shard map's key
	// chain is the next key state of the same hash (the map holds the
	// first): 64-bit hashes of distinct keys meet next to never, so the
	// map is keyed by the hash, which the shard's choice has computed
	// already, instead of hashing and comparing the key's string again.
	chain *keyState
	// first is the key's entry of one shape, more those of the others:
	// most keys are read in one shape (GET), and a map each would cost
	// more than the entry.
	first   *entry
	more    map[string]*entry
	pending int32 // reads reserved and not yet filled or abandoned
	// gone: removed from its shard (invalidated, purged, idle). A Fill
	// that holds it then drops its reply; a map lookup would say the same
	// at the cost of hashing the key again, on every miss.
	gone bool
}

// get is the key's entry of shape sub, or nil.
func (ks *keyState) get(sub string) *entry {
	if ks.first != nil && ks.first.sub == sub {
		return ks.first
	}
	return ks.more[sub]
}

// put makes e the key's entry of its shape, and returns the one it
// replaces, or nil.
func (ks *keyState) put(e *entry) (old *entry) {
	switch {
	case ks.first != nil && ks.first.sub == e.sub:
		old, ks.first = ks.first, e
	case ks.more[e.sub] != nil:
		// The shape's entry is in more (first was another's, since
		// evicted): replace it there, or both would be listed.
		old = ks.more[e.sub]
		ks.more[e.sub] = e
	case ks.first == nil:
		ks.first = e
	default:
		if ks.more == nil {
			ks.more = map[string]*entry{}
		}
		old = ks.more[e.sub]
		ks.more[e.sub] = e
	}
	return old
}

// drop removes e from the key, if it is the key's entry of its shape.
func (ks *keyState) drop(e *entry) {
	switch {
	case ks.first == e:
		ks.first = nil
	case ks.more[e.sub] == e:
		delete(ks.more, e.sub)
	}
}

// count is how many entries the key has.
func (ks *keyState) count() int {
	n := len(ks.more)
	if ks.first != nil {
		n++
	}
	return n
}

// each calls f with each of the key's entries.
func (ks *keyState) each(f func(*entry)) {
	if ks.first != nil {
		f(ks.first)
	}
	for _, e := range ks.more {
		f(e)
	}
}

// entry is one cached reply: 80 bytes, a size class of its own (see
// entryOverhead). It points at its key's state, so that evicting it
// needs no lookup of the key.
type entry struct {
	ks    *keyState
	sub   string
	value any
	size  int32 // estimated bytes; a larger reply is not cached
	// used: served since it was filled or last spared (see Fill's
	// eviction). A hit only sets it, once: a hot entry's hits write
	// nothing, where moving it to the front of the list on every hit
	// would write the list's head and neighbours, lines every core's
	// hits of the shard then take from each other.
	used       bool
	epoch      uint64
	expires    int64  // on the store's clock
	prev, next *entry // the shard's recency list
}

// shard is 128 bytes, two cache lines (TestShardSize): two shards never
// share one, so reads of keys in different shards do not take lines from
// each other.
type shard struct {
	mu    sync.Mutex
	keys  map[uint64]*keyState // by hash; see keyState.chain
	bytes int64
	head  entry // sentinel of the recency list: head.next is the most recent
	// hits and misses are counted under the shard's lock, which a read
	// takes anyway: one counter for all would be a cache line every core
	// writes on every read.
	hits, misses uint64
	_            [8]byte // to 128 bytes
}

// locate is the hash of key on node and the shard that holds it.
func (s *Store) locate(node *Node, key string) (*shard, uint64) {
	h := xxhash.ChecksumString64S(key, node.seed)
	return &s.shards[h%numShards], h
}

// find is the state of key on node, or nil. Called with sh locked.
func (sh *shard) find(h uint64, node *Node, key string) *keyState {
	for ks := sh.keys[h]; ks != nil; ks = ks.chain {
		if ks.nk.node == node && ks.nk.key == key {
			return ks
		}
	}
	return nil
}

// findOrAdd is the state of key on node, added if there is none. Called
// with sh locked.
func (sh *shard) findOrAdd(h uint64, node *Node, key string) *keyState {
	head := sh.keys[h]
	for ks := head; ks != nil; ks = ks.chain {
		if ks.nk.node == node && ks.nk.key == key {
			return ks
		}
	}
	ks := &keyState{nk: nodeKey{node, key}, h: h, chain: head}
	sh.keys[h] = ks
	return ks
}

// drop removes ks from the shard. Called with sh locked.
func (sh *shard) drop(ks *keyState) {
	if ks.gone {
		return
	}
	ks.gone = true
	switch head := sh.keys[ks.h]; {
	case head == ks && ks.chain == nil:
		delete(sh.keys, ks.h)
	case head == ks:
		sh.keys[ks.h] = ks.chain
	default:
		for p := head; p != nil; p = p.chain {
			if p.chain == ks {
				p.chain = ks.chain
				break
			}
		}
	}
	ks.chain = nil
}

// unconfirmed is an epoch no node reaches: a read reserved while its
// node has no tracking connection is reserved at it, and never filled.
const unconfirmed = ^uint64(0)

// Ticket is a reserved read: Fill or Abandon it.
type Ticket struct {
	sh    *shard
	sub   string
	ks    *keyState
	epoch uint64
	done  bool
}

// Reserve marks a read of key (as the command shape sub) on node as in
// flight, before it is sent: an invalidation of the key or a flush of the
// node before its Fill makes the Fill drop the reply, and so does a node
// without a tracking connection at the Reserve.
func (s *Store) Reserve(node *Node, key, sub string) *Ticket {
	epoch := node.epoch.Load()
	if node.until.Load() == notAlive {
		// No tracking: the reply may miss its invalidation, and the
		// tracker's next connection starts a new epoch anyway.
		epoch = unconfirmed
	}
	sh, h := s.locate(node, key)
	sh.mu.Lock()
	ks := sh.findOrAdd(h, node, key)
	ks.pending++
	sh.mu.Unlock()
	return &Ticket{sh: sh, sub: sub, ks: ks, epoch: epoch}
}

// Fill stores the reply value of a reserved read, size bytes, for at most
// ttl (and the store's MaxTTL) from now, unless the key was invalidated or
// the node flushed since the Reserve. It reports whether it stored it.
func (s *Store) Fill(t *Ticket, value any, size int64, ttl time.Duration, now time.Time) bool {
	return s.fill(t, value, size, ttl, clock(now))
}

// fill is Fill at now on the store's clock.
func (s *Store) fill(t *Ticket, value any, size int64, ttl time.Duration, now int64) bool {
	if t.done {
		return false
	}
	t.done = true
	if ttl <= 0 || ttl > s.maxTTL {
		ttl = s.maxTTL
	}
	size += int64(len(t.ks.nk.key)+len(t.sub)) + entryOverhead
	sh := t.sh
	sh.mu.Lock()
	defer sh.mu.Unlock()
	t.ks.pending--
	if t.ks.gone || t.ks.nk.node.epoch.Load() != t.epoch {
		s.counts.FillsRaced.Add(1)
		s.dropIfIdle(sh, t.ks)
		return false
	}
	if size > s.shardMax || size > math.MaxInt32 {
		s.counts.TooLarge.Add(1)
		s.dropIfIdle(sh, t.ks)
		return false
	}
	e := &entry{ks: t.ks, sub: t.sub, value: value, size: int32(size), epoch: t.epoch, expires: now + int64(ttl)} //nolint:gosec // size ≤ MaxInt32, checked above
	if old := t.ks.put(e); old != nil {
		s.unlink(sh, old)
	}
	s.link(sh, e)
	// Evict from the tail, sparing (to the front, once) an entry served
	// since it was filled or last spared: the second-chance (CLOCK)
	// approximation of least recently used, which costs a hit nothing but
	// a flag. At most maxSpared spared an eviction, so that a Fill's time
	// under the lock stays bounded when every entry was served.
	for spared := 0; sh.bytes > s.shardMax; {
		victim := sh.head.prev
		if victim.used && victim != e && spared < maxSpared {
			victim.used = false
			s.toFront(sh, victim)
			spared++
			continue
		}
		s.remove(sh, victim)
		s.counts.Evictions.Add(1)
	}
	s.counts.Fills.Add(1)
	return true
}

// Abandon ends a reserved read that has no reply to cache (an error, a
// cancelled call). Idempotent, and a no-op after Fill.
func (s *Store) Abandon(t *Ticket) {
	if t.done {
		return
	}
	t.done = true
	sh := t.sh
	sh.mu.Lock()
	t.ks.pending--
	s.dropIfIdle(sh, t.ks)
	sh.mu.Unlock()
}

// Get returns the cached reply of key (as sub) on node, if there is one
// filled in the node's current epoch, not expired at now, and the node's
// tracking is known alive at now.
func (s *Store) Get(node *Node, key, sub string, now time.Time) (any, bool) {
	sh, h := s.locate(node, key)
	epoch, confirmed := node.epoch.Load(), node.Confirmed(now)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if e := s.lookup(sh, h, node, key, sub); e != nil && s.servable(e, confirmed, epoch, clock(now)) {
		sh.hits++
		return e.value, true
	}
	sh.misses++
	return nil, false
}

// GetOrReserve is Get and, on a miss, Reserve in one visit of the key's
// shard (the read path's: one lock, one lookup): it returns the cached
// reply, or reserves the read into *tk for its Fill or Abandon.
func (s *Store) GetOrReserve(node *Node, key, sub string, now time.Time, tk *Ticket) (any, bool) {
	return s.getOrReserve(node, key, sub, clock(now), tk)
}

// getOrReserve is GetOrReserve at now on the store's clock.
func (s *Store) getOrReserve(node *Node, key, sub string, now int64, tk *Ticket) (any, bool) {
	sh, h := s.locate(node, key)
	epoch, until := node.epoch.Load(), node.until.Load()
	sh.mu.Lock()
	ks := sh.findOrAdd(h, node, key)
	if e := ks.get(sub); e != nil && s.servable(e, now < until, epoch, now) {
		sh.hits++
		v := e.value
		sh.mu.Unlock()
		return v, true
	}
	sh.misses++
	ks.pending++
	sh.mu.Unlock()
	if until == notAlive {
		epoch = unconfirmed // as Reserve: no tracking, no fill
	}
	*tk = Ticket{sh: sh, sub: sub, ks: ks, epoch: epoch}
	return nil, false
}

// servable reports whether e may be served at now (and marks it used if
// so): its node's tracking confirmed, e not expired, filled in the node's
// current epoch. Called with sh locked.
func (s *Store) servable(e *entry, confirmed bool, epoch uint64, now int64) bool {
	switch {
	case !confirmed:
		return false // until the tracker hears from the server again
	case now >= e.expires:
		// Past its TTL: a miss, whose fill replaces it. Kept until then
		// (or evicted): GetStale may serve it while the node is down.
		s.counts.Expirations.Add(1)
		return false
	case e.epoch != epoch:
		return false // unconfirmed: kept for GetStale until evicted or replaced
	}
	if !e.used {
		e.used = true
	}
	return true
}

// maxSpared bounds the entries one eviction spares (see Fill).
const maxSpared = 8

// HitsMisses are the reads Get served, and those it did not.
func (s *Store) HitsMisses() (hits, misses uint64) {
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		hits, misses = hits+sh.hits, misses+sh.misses
		sh.mu.Unlock()
	}
	return hits, misses
}

// GetStale returns the cached reply of key (as sub) on node when it can
// no longer be confirmed, for a node that cannot be reached: any entry,
// of this epoch or an ended one, whose age is at most maxStale. The age
// is the time since the entry was last known current: for an entry of
// the current epoch, since the node's tracking was last known alive (0
// while it is), else since its epoch ended. Expiry (the TTL)
// does not apply: serving stale is the point.
func (s *Store) GetStale(node *Node, key, sub string, now time.Time, maxStale time.Duration) (value any, age time.Duration, ok bool) {
	if maxStale <= 0 {
		return nil, 0, false
	}
	sh, h := s.locate(node, key)
	epoch := node.epoch.Load()
	sh.mu.Lock()
	e := s.lookup(sh, h, node, key, sub)
	if e != nil {
		known := true
		if e.epoch != epoch {
			var end time.Time
			end, known = node.endOf(e.epoch)
			age = max(now.Sub(end), 0)
		} else if until := node.until.Load(); until != notAlive {
			age = max(time.Duration(clock(now)-until), 0)
		}
		if !known || age > maxStale {
			e = nil
		} else {
			value = e.value
		}
	}
	sh.mu.Unlock()
	if e == nil {
		return nil, 0, false
	}
	return value, age, true
}

// Invalidate removes every entry of key on node, and makes the reads of
// it in flight drop their replies.
func (s *Store) Invalidate(node *Node, key string) {
	sh, h := s.locate(node, key)
	sh.mu.Lock()
	if ks := sh.find(h, node, key); ks != nil {
		ks.each(func(e *entry) { s.unlink(sh, e) })
		sh.drop(ks)
		s.counts.Invalidations.Add(1)
	}
	sh.mu.Unlock()
}

// Purge removes every entry of node (a node the client no longer uses, or
// a flush the server announced): what Flush makes unconfirmed, Purge
// frees. Reads in flight on it drop their replies.
func (s *Store) Purge(node *Node) {
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		var ours []*keyState
		for _, head := range sh.keys {
			for ks := head; ks != nil; ks = ks.chain {
				if ks.nk.node == node {
					ours = append(ours, ks)
				}
			}
		}
		for _, ks := range ours {
			ks.each(func(e *entry) {
				s.unlink(sh, e)
				s.counts.FlushedEntries.Add(1)
			})
			sh.drop(ks)
		}
		sh.mu.Unlock()
	}
}

// Bytes is the store's estimated size; Entries its entries.
func (s *Store) Bytes() int64 { return s.bytes.Load() }

// Entries counts the store's entries (walking every shard).
func (s *Store) Entries() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for _, head := range sh.keys {
			for ks := head; ks != nil; ks = ks.chain {
				n += ks.count()
			}
		}
		sh.mu.Unlock()
	}
	return n
}

// Counts returns the store's counters.
func (s *Store) Counts() *Counts { return &s.counts }

func (s *Store) lookup(sh *shard, h uint64, node *Node, key, sub string) *entry {
	ks := sh.find(h, node, key)
	if ks == nil {
		return nil
	}
	return ks.get(sub)
}

// dropIfIdle removes ks from the shard if it is still the key's state and
// holds nothing: no entry, no read in flight.
func (s *Store) dropIfIdle(sh *shard, ks *keyState) {
	if ks.pending == 0 && ks.first == nil && len(ks.more) == 0 {
		sh.drop(ks)
	}
}

// remove takes e out of its key and the recency list.
func (s *Store) remove(sh *shard, e *entry) {
	e.ks.drop(e)
	s.dropIfIdle(sh, e.ks)
	s.unlink(sh, e)
}

func (s *Store) link(sh *shard, e *entry) {
	if sh.head.next == nil {
		sh.head.next, sh.head.prev = &sh.head, &sh.head
	}
	e.prev, e.next = &sh.head, sh.head.next
	sh.head.next.prev = e
	sh.head.next = e
	sh.bytes += int64(e.size)
	s.bytes.Add(int64(e.size))
}

func (s *Store) unlink(sh *shard, e *entry) {
	if e.prev == nil {
		return
	}
	e.prev.next = e.next
	e.next.prev = e.prev
	e.prev, e.next = nil, nil
	sh.bytes -= int64(e.size)
	s.bytes.Add(-int64(e.size))
}

func (s *Store) toFront(sh *shard, e *entry) {
	if sh.head.next == e {
		return
	}
	e.prev.next = e.next
	e.next.prev = e.prev
	e.prev, e.next = &sh.head, sh.head.next
	sh.head.next.prev = e
	sh.head.next = e
}
