package shop

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// ErrUnknownProduct is the price store's answer for a SKU it does not
// have (HTTP 404).
var ErrUnknownProduct = errors.New("shop: unknown product")

// PriceStore stands in for the prices table of the shop's database: an
// in-process map that counts its reads and can be slowed down or held.
type PriceStore struct {
	mu     sync.Mutex
	prices map[string]int64
	delay  time.Duration
	hold   chan struct{} // non-nil: reads wait until it is closed

	reads    atomic.Int64
	lastRead atomic.Int64 // UnixNano of the last read's start
}

// NewPriceStore returns a store with the given prices (in minor units)
// whose reads take delay.
func NewPriceStore(prices map[string]int64, delay time.Duration) *PriceStore {
	p := &PriceStore{prices: map[string]int64{}, delay: delay}
	for sku, price := range prices {
		p.prices[sku] = price
	}
	return p
}

// Price reads the price of sku, as SELECT price FROM products WHERE sku = $1
// would: it takes the store's delay and honours ctx.
func (p *PriceStore) Price(ctx context.Context, sku string) (int64, error) {
	p.reads.Add(1)
	p.lastRead.Store(time.Now().UnixNano())
	p.mu.Lock()
	price, ok := p.prices[sku]
	hold := p.hold
	p.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	if err := sleep(ctx, p.delay); err != nil {
		return 0, err
	}
	if !ok {
		return 0, fmt.Errorf("%w %q", ErrUnknownProduct, sku)
	}
	return price, nil
}

// Hold makes reads wait until the returned release is called (as a
// saturated database would), so tests and the tour can fill the loader's
// slots.
func (p *PriceStore) Hold() (release func()) {
	ch := make(chan struct{})
	p.mu.Lock()
	p.hold = ch
	p.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			if p.hold == ch {
				p.hold = nil
			}
			p.mu.Unlock()
			close(ch)
		})
	}
}

// Reads is the number of reads so far.
func (p *PriceStore) Reads() int64 { return p.reads.Load() }

// LastRead is when the last read started (zero before the first).
func (p *PriceStore) LastRead() time.Time {
	ns := p.lastRead.Load()
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// Payment is a charge the provider made.
type Payment struct {
	ID          string `json:"payment_id"`
	AmountMinor int64  `json:"amount_minor"`
	// Replayed reports that the idempotency key had been used: this is
	// the first request's payment, returned again, not a new charge.
	Replayed bool `json:"replayed"`
}

// ErrIdempotencyMismatch is the provider's answer to a reused
// idempotency key with a different amount.
var ErrIdempotencyMismatch = errors.New("shop: idempotency key reused with another amount")

// Provider stands in for a payment provider that supports idempotent
// charges: the same idempotency key and amount, even concurrently, never
// create a second payment; the first one is returned again.
type Provider struct {
	mu    sync.Mutex
	byKey map[string]Payment
	delay time.Duration

	calls, charges atomic.Int64
}

// NewProvider returns a provider whose charges take delay.
func NewProvider(delay time.Duration) *Provider {
	return &Provider{byKey: map[string]Payment{}, delay: delay}
}

// Charge charges amountMinor under idempotencyKey.
func (p *Provider) Charge(ctx context.Context, idempotencyKey string, amountMinor int64) (Payment, error) {
	p.calls.Add(1)
	if err := sleep(ctx, p.delay); err != nil {
		return Payment{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if prev, ok := p.byKey[idempotencyKey]; ok {
		if prev.AmountMinor != amountMinor {
			return Payment{}, ErrIdempotencyMismatch
		}
		prev.Replayed = true
		return prev, nil
	}
	n := p.charges.Add(1)
	pay := Payment{ID: fmt.Sprintf("pay_%04d", n), AmountMinor: amountMinor}
	p.byKey[idempotencyKey] = pay
	return pay, nil
}

// Calls is the number of Charge requests, replays included.
func (p *Provider) Calls() int64 { return p.calls.Load() }

// Charges is the number of payments actually made.
func (p *Provider) Charges() int64 { return p.charges.Load() }

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
