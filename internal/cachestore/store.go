package cachestore

import (
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
	maxTTL   time.Duration
	shardMax int64 // bytes a shard may hold
	shards   [numShards]shard
	bytes    atomic.Int64
	counts   Counts
}

// numShards spreads the locks: a hit takes its shard's mutex (to move the
// entry to the front of the shard's recency list), so at 256 readers on
// random keys two rarely meet.
const numShards = 64

// entryOverhead is what an entry costs besides its key's and value's
// bytes: the entry (96 bytes), its key's state (32), the shard map's slot
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
		s.shards[i].keys = map[nodeKey]*keyState{}
	}
	return s
}

// Node is one server's part of a store. Its entries are served while its
// epoch is the one they were filled in: the tracker ends the epoch
// (Flush) whenever invalidations may have been missed, which makes every
// entry filled before it unconfirmed at once, without walking them.
type Node struct {
	addr  string
	epoch atomic.Uint64
	// until is when the node's tracking stops being known alive (unix
	// nanoseconds; 0: not alive): the tracker moves it forward with every
	// message or heartbeat reply its invalidation connection reads, so a
	// connection that goes silent stops the node's hits by then.
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
func NewNode(addr string) *Node { return &Node{addr: addr} }

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
func (n *Node) confirm(until time.Time) { n.until.Store(until.UnixNano()) }

// unconfirm records that the node's tracking is not alive.
func (n *Node) unconfirm() { n.until.Store(0) }

// Confirmed reports whether the node's tracking is known alive at now.
func (n *Node) Confirmed(now time.Time) bool { return now.UnixNano() < n.until.Load() }

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
	// first is the key's entry of one shape, more those of the others:
	// most keys are read in one shape (GET), and a map each would cost
	// more than the entry.
	first   *entry
	more    map[string]*entry
	pending int // reads reserved and not yet filled or abandoned
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
	case ks.first == nil || ks.first.sub == e.sub:
		old, ks.first = ks.first, e
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

// entry is one cached reply: 96 bytes (a size class of its own; see
// entryOverhead).
type entry struct {
	nk         nodeKey
	sub        string
	value      any
	size       int64
	epoch      uint64
	expires    int64  // unix nanoseconds
	prev, next *entry // the shard's recency list
}

type shard struct {
	mu    sync.Mutex
	keys  map[nodeKey]*keyState
	bytes int64
	head  entry // sentinel of the recency list: head.next is the most recent
	// hits and misses are counted under the shard's lock, which a read
	// takes anyway: one counter for all would be a cache line every core
	// writes on every read.
	hits, misses uint64
}

func (s *Store) shardOf(nk nodeKey) *shard {
	h := xxhash.ChecksumString64S(nk.key, uint64(len(nk.node.addr)))
	return &s.shards[h%numShards]
}

// unconfirmed is an epoch no node reaches: a read reserved while its
// node has no tracking connection is reserved at it, and never filled.
const unconfirmed = ^uint64(0)

// Ticket is a reserved read: Fill or Abandon it.
type Ticket struct {
	nk    nodeKey
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
	if node.until.Load() == 0 {
		// No tracking: the reply may miss its invalidation, and the
		// tracker's next connection starts a new epoch anyway.
		epoch = unconfirmed
	}
	nk := nodeKey{node, key}
	sh := s.shardOf(nk)
	sh.mu.Lock()
	ks := sh.keys[nk]
	if ks == nil {
		ks = &keyState{}
		sh.keys[nk] = ks
	}
	ks.pending++
	sh.mu.Unlock()
	return &Ticket{nk: nk, sub: sub, ks: ks, epoch: epoch}
}

// Fill stores the reply value of a reserved read, size bytes, for at most
// ttl (and the store's MaxTTL) from now, unless the key was invalidated or
// the node flushed since the Reserve. It reports whether it stored it.
func (s *Store) Fill(t *Ticket, value any, size int64, ttl time.Duration, now time.Time) bool {
	if t.done {
		return false
	}
	t.done = true
	if ttl <= 0 || ttl > s.maxTTL {
		ttl = s.maxTTL
	}
	size += int64(len(t.nk.key)+len(t.sub)) + entryOverhead
	sh := s.shardOf(t.nk)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	t.ks.pending--
	if sh.keys[t.nk] != t.ks || t.nk.node.epoch.Load() != t.epoch {
		s.counts.FillsRaced.Add(1)
		s.dropIfIdle(sh, t.nk, t.ks)
		return false
	}
	if size > s.shardMax {
		s.counts.TooLarge.Add(1)
		s.dropIfIdle(sh, t.nk, t.ks)
		return false
	}
	e := &entry{nk: t.nk, sub: t.sub, value: value, size: size, epoch: t.epoch, expires: now.Add(ttl).UnixNano()}
	if old := t.ks.put(e); old != nil {
		s.unlink(sh, old)
	}
	s.link(sh, e)
	for sh.bytes > s.shardMax {
		victim := sh.head.prev
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
	sh := s.shardOf(t.nk)
	sh.mu.Lock()
	t.ks.pending--
	s.dropIfIdle(sh, t.nk, t.ks)
	sh.mu.Unlock()
}

// Get returns the cached reply of key (as sub) on node, if there is one
// filled in the node's current epoch, not expired at now, and the node's
// tracking is known alive at now.
func (s *Store) Get(node *Node, key, sub string, now time.Time) (any, bool) {
	nk := nodeKey{node, key}
	sh := s.shardOf(nk)
	epoch, confirmed := node.epoch.Load(), node.Confirmed(now)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if e := s.lookup(sh, nk, sub); e != nil && s.servable(sh, e, confirmed, epoch, now) {
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
	nk := nodeKey{node, key}
	sh := s.shardOf(nk)
	epoch, until := node.epoch.Load(), node.until.Load()
	sh.mu.Lock()
	ks := sh.keys[nk]
	if ks != nil {
		if e := ks.get(sub); e != nil && s.servable(sh, e, now.UnixNano() < until, epoch, now) {
			sh.hits++
			v := e.value
			sh.mu.Unlock()
			return v, true
		}
	} else {
		ks = &keyState{}
		sh.keys[nk] = ks
	}
	sh.misses++
	ks.pending++
	sh.mu.Unlock()
	if until == 0 {
		epoch = unconfirmed // as Reserve: no tracking, no fill
	}
	*tk = Ticket{nk: nk, sub: sub, ks: ks, epoch: epoch}
	return nil, false
}

// servable reports whether e may be served at now (and moves it to the
// front of the recency list if so): its node's tracking confirmed, e not
// expired, filled in the node's current epoch. Called with sh locked.
func (s *Store) servable(sh *shard, e *entry, confirmed bool, epoch uint64, now time.Time) bool {
	switch {
	case !confirmed:
		return false // until the tracker hears from the server again
	case now.UnixNano() >= e.expires:
		// Past its TTL: a miss, whose fill replaces it. Kept until then
		// (or evicted): GetStale may serve it while the node is down.
		s.counts.Expirations.Add(1)
		return false
	case e.epoch != epoch:
		return false // unconfirmed: kept for GetStale until evicted or replaced
	}
	s.touch(sh, e)
	return true
}

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
	nk := nodeKey{node, key}
	sh := s.shardOf(nk)
	epoch := node.epoch.Load()
	sh.mu.Lock()
	e := s.lookup(sh, nk, sub)
	if e != nil {
		known := true
		if e.epoch != epoch {
			var end time.Time
			end, known = node.endOf(e.epoch)
			age = max(now.Sub(end), 0)
		} else if until := node.until.Load(); until != 0 {
			age = max(now.Sub(time.Unix(0, until)), 0)
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
	nk := nodeKey{node, key}
	sh := s.shardOf(nk)
	sh.mu.Lock()
	ks := sh.keys[nk]
	if ks != nil {
		ks.each(func(e *entry) { s.unlink(sh, e) })
		delete(sh.keys, nk)
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
		for nk, ks := range sh.keys {
			if nk.node != node {
				continue
			}
			ks.each(func(e *entry) {
				s.unlink(sh, e)
				s.counts.FlushedEntries.Add(1)
			})
			delete(sh.keys, nk)
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
		for _, ks := range sh.keys {
			n += ks.count()
		}
		sh.mu.Unlock()
	}
	return n
}

// Counts returns the store's counters.
func (s *Store) Counts() *Counts { return &s.counts }

func (s *Store) lookup(sh *shard, nk nodeKey, sub string) *entry {
	ks := sh.keys[nk]
	if ks == nil {
		return nil
	}
	return ks.get(sub)
}

// dropIfIdle removes ks from the shard if it is still the key's state and
// holds nothing: no entry, no read in flight.
func (s *Store) dropIfIdle(sh *shard, nk nodeKey, ks *keyState) {
	if ks.pending == 0 && ks.first == nil && len(ks.more) == 0 && sh.keys[nk] == ks {
		delete(sh.keys, nk)
	}
}

// remove takes e out of its key and the recency list.
func (s *Store) remove(sh *shard, e *entry) {
	ks := sh.keys[e.nk]
	if ks != nil {
		ks.drop(e)
		s.dropIfIdle(sh, e.nk, ks)
	}
	s.unlink(sh, e)
}

func (s *Store) link(sh *shard, e *entry) {
	if sh.head.next == nil {
		sh.head.next, sh.head.prev = &sh.head, &sh.head
	}
	e.prev, e.next = &sh.head, sh.head.next
	sh.head.next.prev = e
	sh.head.next = e
	sh.bytes += e.size
	s.bytes.Add(e.size)
}

func (s *Store) unlink(sh *shard, e *entry) {
	if e.prev == nil {
		return
	}
	e.prev.next = e.next
	e.next.prev = e.prev
	e.prev, e.next = nil, nil
	sh.bytes -= e.size
	s.bytes.Add(-e.size)
}

func (s *Store) touch(sh *shard, e *entry) {
	if sh.head.next == e {
		return
	}
	e.prev.next = e.next
	e.next.prev = e.prev
	e.prev, e.next = &sh.head, sh.head.next
	sh.head.next.prev = e
	sh.head.next = e
}
