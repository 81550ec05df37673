package guard

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultAdmissionTTL is how long an admission key lives when
// GateConfig.TTL is zero.
const DefaultAdmissionTTL = 30 * time.Second

// GateConfig configures an admission Gate.
type GateConfig struct {
	// Name is the gate's namespace: its keys are <prefix>:<Name>:<id>. It
	// also names it in errors and logs. Required.
	Name string
	// TTL is how long an admission holds: every other attempt for the same
	// id within TTL is refused with ErrBusy. Default DefaultAdmissionTTL
	// (30 s).
	TTL time.Duration
}

// GateStats are a Gate's counters since it was made.
type GateStats struct {
	Admitted    uint64 // attempts admitted
	Busy        uint64 // attempts refused because another was admitted (ErrBusy)
	Unavailable uint64 // attempts refused because Redis failed (ErrUnavailable)
}

// Gate admits one attempt per id per TTL: SET <key> pending NX EX <ttl>
// (PX when the TTL is not whole seconds).
// It keeps a flow (a payment, say) from running twice for the same id
// when a buyer double-clicks: the first attempt is admitted, the others
// get ErrBusy until the key expires. It fails closed: when Redis fails,
// nothing is admitted (ErrUnavailable), so the guarded work does not
// start.
//
// The gate never deletes its key: for TTL every repeat is refused, a retry
// after a declined card included. That is the simple, safe choice: a
// delete that raced with the key's expiry could release another attempt's
// admission. Protection against a second charge comes from the payment
// provider's idempotency key; the gate only keeps our own flow from
// running twice.
//
// Choose the id with the provider's idempotency key in mind. Per order
// (id = order id, idempotency key derived from it): a retry after TTL
// reuses the idempotency key and receives the first attempt's result, so a
// charge whose reply was lost is not repeated — but a provider that also
// stores declines replays the decline to a buyer retrying with another
// card. Per payment attempt (a fresh id and idempotency key for each
// attempt the buyer starts): a new card gets a new attempt, and the
// provider's deduplication covers only retries of that attempt.
type Gate struct {
	g    *Guard
	name string
	ttl  time.Duration
	op   string

	admitted, busy, unavailable atomic.Uint64
}

// NewGate returns a Gate that uses g.
func NewGate(g *Guard, cfg GateConfig) (*Gate, error) {
	switch {
	case g == nil:
		return nil, configError("", "guard", "is nil")
	case cfg.Name == "":
		return nil, configError("GateConfig", "Name", "is required (it is the keys' namespace)")
	case cfg.TTL < 0:
		return nil, configError("GateConfig", "TTL", "must not be negative")
	case cfg.TTL > 0 && cfg.TTL < time.Millisecond:
		return nil, configError("GateConfig", "TTL", "must be at least 1ms")
	}
	if cfg.TTL == 0 {
		cfg.TTL = DefaultAdmissionTTL
	}
	return &Gate{g: g, name: cfg.Name, ttl: cfg.TTL, op: cfg.Name + " admission"}, nil
}

// Key is the Redis key of id's admission.
func (a *Gate) Key(id string) string { return a.g.Key(a.name, id) }

// TTL is how long an admission holds.
func (a *Gate) TTL() time.Duration { return a.ttl }

// Admit admits an attempt for id. It returns nil when the attempt is
// admitted and may start its work; a *BusyError (ErrBusy) when another
// attempt was admitted within TTL; an *UnavailableError (ErrUnavailable)
// when Redis failed, in which case the work must not start; the caller's
// ctx.Err() when ctx ended.
//
// Admit is not retried. If the SET's reply is lost (a timeout), the key
// may have been set: the next attempt then gets ErrBusy until TTL, which
// errs on the side of not running the flow twice.
func (a *Gate) Admit(ctx context.Context, id string) error {
	if id == "" {
		return fmt.Errorf("guard: %s: empty id", a.name)
	}
	key := a.Key(id)
	var ok bool
	err := a.g.Call(ctx, a.op, func(ctx context.Context, c redis.Cmdable) error {
		var err error
		ok, err = c.SetNX(ctx, key, "pending", a.ttl).Result()
		return err
	})
	switch {
	case err != nil && callerGaveUp(ctx, err):
		return err
	case err != nil:
		a.unavailable.Add(1)
		a.g.log.Warn("guard: admission cannot be checked; refusing", "gate", a.name, "err", err)
		return &UnavailableError{Name: a.name, Reason: ReasonRedis, Err: err}
	case !ok:
		a.busy.Add(1)
		return &BusyError{Name: a.name, TTL: a.ttl}
	}
	a.admitted.Add(1)
	return nil
}

// Stats returns the gate's counters.
func (a *Gate) Stats() GateStats {
	return GateStats{Admitted: a.admitted.Load(), Busy: a.busy.Load(), Unavailable: a.unavailable.Load()}
}
