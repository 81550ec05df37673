package shop

import (
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/rediskit/rediskit/guard"
	"github.com/rediskit/rediskit/guard/httpguard"
	"github.com/rediskit/rediskit/rediskitotel"
)

// Config configures a Shop. Only Guard is required.
type Config struct {
	// Guard is the shop's Redis, with its key prefix and call limit.
	Guard *guard.Guard
	// Prices is the catalog, in minor units. Default: DefaultPrices().
	Prices map[string]int64
	// Accounts maps login names (normalized: lower case, trimmed) to
	// passwords. Default: DefaultAccounts().
	Accounts map[string]string
	// PriceDelay is the price store's read latency. Default 2 ms.
	PriceDelay time.Duration
	// ProviderDelay is the payment provider's latency. Default 0.
	ProviderDelay time.Duration
	// LoginLimit attempts per account per LoginWindow. Default 5 per
	// minute.
	LoginLimit  int64
	LoginWindow time.Duration
	// PaymentTTL is how long a payment admission holds. Default 30 s.
	PaymentTTL time.Duration
	// LoadSlots and LoadTimeout bound the catalog's database fallback.
	// Default 8 and 500 ms.
	LoadSlots   int
	LoadTimeout time.Duration
	// MonitorInterval is how often the Redis health monitor behind
	// GET /debug/redis runs. Default 5 s.
	MonitorInterval time.Duration
	// Logger receives the shop's records. Default: discarded.
	Logger *slog.Logger
	// Metrics, when set, receives the shop's guard metrics (catalog cache,
	// login limiter, payment gate, Redis health), and MetricsHandler, when
	// set, is served at GET /metrics (see NewPrometheusMetrics).
	Metrics        *rediskitotel.Metrics
	MetricsHandler http.Handler
}

// DefaultPrices is the catalog of a Shop whose Config has none.
func DefaultPrices() map[string]int64 {
	return map[string]int64{"sku-1": 1250, "sku-2": 899, "sku-3": 4500}
}

// DefaultAccounts are the accounts of a Shop whose Config has none.
func DefaultAccounts() map[string]string {
	return map[string]string{"alice": "wonderland", "bob": "builder"}
}

// Shop is the example service: three routes that behave differently when
// Redis is unavailable.
//
//	GET  /catalog/{sku}  fail open: the price from Redis, else from the
//	                     database under a bounded fallback (503 when the
//	                     fallback is saturated)
//	POST /login          fail closed: 5 attempts per account per minute,
//	                     checked before the password (429 over the limit,
//	                     503 when Redis cannot count)
//	POST /pay            fail closed: one admitted attempt per order (409
//	                     for a repeat, 503 when Redis cannot admit: no
//	                     charge is started)
//	GET  /healthz        liveness: the process answers; never Redis
//	GET  /readyz         readiness: independent of Redis, because the
//	                     catalog still works without it
//	GET  /debug/redis    the Redis monitor's last report (cached)
type Shop struct {
	prices   *PriceStore
	provider *Provider
	accounts map[string]string
	catalog  *guard.Cache[int64]
	logins   *guard.Limiter
	payments *guard.Gate
	monitor  *guard.Monitor
	metrics  []metric.Registration
	log      *slog.Logger
	handler  http.Handler
}

// Stats are the shop's counters.
type Stats struct {
	PriceReads    int64 // reads of the price store (the database)
	ProviderCalls int64 // charge requests, replays included
	Charges       int64 // payments actually made
	Catalog       guard.CacheStats
	Login         guard.LimiterStats
	Payment       guard.GateStats
}

// New returns a Shop. Close stops its health monitor; it does not close
// the guard.
func New(cfg Config) (*Shop, error) {
	if cfg.Guard == nil {
		return nil, errors.New("shop: Config.Guard is required")
	}
	if cfg.Prices == nil {
		cfg.Prices = DefaultPrices()
	}
	if cfg.Accounts == nil {
		cfg.Accounts = DefaultAccounts()
	}
	if cfg.PriceDelay == 0 {
		cfg.PriceDelay = 2 * time.Millisecond
	}
	if cfg.LoginLimit == 0 {
		cfg.LoginLimit = 5
	}
	if cfg.LoginWindow == 0 {
		cfg.LoginWindow = time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Shop{
		prices:   NewPriceStore(cfg.Prices, cfg.PriceDelay),
		provider: NewProvider(cfg.ProviderDelay),
		accounts: maps.Clone(cfg.Accounts),
		log:      cfg.Logger,
	}
	var err error
	s.catalog, err = guard.NewCache(cfg.Guard, guard.CacheConfig[int64]{
		Name:        "price",
		Load:        s.prices.Price,
		LoadSlots:   cfg.LoadSlots,
		LoadTimeout: cfg.LoadTimeout,
	})
	if err != nil {
		return nil, err
	}
	s.logins, err = guard.NewLimiter(cfg.Guard, guard.LimiterConfig{Name: "login", Limit: cfg.LoginLimit, Window: cfg.LoginWindow})
	if err != nil {
		return nil, err
	}
	// Per order: a retry after the TTL reuses the order's idempotency key
	// and gets the first attempt's payment back (see guard.Gate).
	s.payments, err = guard.NewGate(cfg.Guard, guard.GateConfig{Name: "payment", TTL: cfg.PaymentTTL})
	if err != nil {
		return nil, err
	}
	checker, err := guard.NewChecker(cfg.Guard, guard.HealthConfig{WriteProbe: true})
	if err != nil {
		return nil, err
	}
	s.monitor, err = guard.NewMonitor(checker, guard.MonitorConfig{Interval: cfg.MonitorInterval,
		OnReport: func(r guard.Report) {
			if !r.Writable() {
				s.log.Warn("shop: redis degraded", "state", r.State.String(), "err", r.Err)
			}
		}})
	if err != nil {
		return nil, err
	}

	if cfg.Metrics != nil {
		if err := s.registerMetrics(cfg.Metrics); err != nil {
			_ = s.Close()
			return nil, err
		}
	}

	mux := http.NewServeMux()
	if cfg.MetricsHandler != nil {
		mux.Handle("GET /metrics", cfg.MetricsHandler)
	}
	mux.Handle("GET /catalog/{sku}", httpguard.Handler(s.log, s.getPrice))
	mux.Handle("POST /login", httpguard.Handler(s.log, s.login))
	mux.Handle("POST /pay", httpguard.Handler(s.log, s.pay))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ready\n")) })
	mux.HandleFunc("GET /debug/redis", s.redisReport)
	s.handler = mux
	return s, nil
}

// Handler is the shop's HTTP handler.
func (s *Shop) Handler() http.Handler { return s.handler }

// Prices is the shop's price store stand-in.
func (s *Shop) Prices() *PriceStore { return s.prices }

// Provider is the shop's payment provider stand-in.
func (s *Shop) Provider() *Provider { return s.provider }

// Stats returns the shop's counters.
func (s *Shop) Stats() Stats {
	return Stats{
		PriceReads:    s.prices.Reads(),
		ProviderCalls: s.provider.Calls(),
		Charges:       s.provider.Charges(),
		Catalog:       s.catalog.Stats(),
		Login:         s.logins.Stats(),
		Payment:       s.payments.Stats(),
	}
}

// registerMetrics reports the guard components under the shop's names.
func (s *Shop) registerMetrics(m *rediskitotel.Metrics) error {
	for _, register := range []func() (metric.Registration, error){
		func() (metric.Registration, error) { return m.RegisterCache("price", s.catalog.Stats) },
		func() (metric.Registration, error) { return m.RegisterLimiter("login", s.logins) },
		func() (metric.Registration, error) { return m.RegisterGate("payment", s.payments) },
		func() (metric.Registration, error) { return m.RegisterHealth("redis", s.monitor) },
	} {
		reg, err := register()
		if err != nil {
			return err
		}
		s.metrics = append(s.metrics, reg)
	}
	return nil
}

// Close stops the shop's health monitor and its metrics. It is safe to
// call twice.
func (s *Shop) Close() error {
	var errs []error
	for _, reg := range s.metrics {
		errs = append(errs, reg.Unregister())
	}
	s.metrics = nil
	return errors.Join(append(errs, s.monitor.Close())...)
}

// PriceResponse is the body of GET /catalog/{sku}.
type PriceResponse struct {
	SKU        string `json:"sku"`
	PriceMinor int64  `json:"price_minor"`
	// Source is "cache" (Redis), "loader" or "shared" (the database).
	Source string `json:"source"`
	// Degraded reports that Redis failed and the price came from the
	// database.
	Degraded bool `json:"degraded,omitempty"`
}

func (s *Shop) getPrice(w http.ResponseWriter, r *http.Request) error {
	sku := r.PathValue("sku")
	res, err := s.catalog.Lookup(r.Context(), sku)
	if errors.Is(err, ErrUnknownProduct) {
		http.Error(w, "unknown product", http.StatusNotFound)
		return nil
	}
	if err != nil {
		return err
	}
	return writeJSON(w, PriceResponse{SKU: sku, PriceMinor: res.Value, Source: res.Source.String(), Degraded: res.RedisFailed})
}

// LoginRequest is the body of POST /login.
type LoginRequest struct {
	Account  string `json:"account"`
	Password string `json:"password"`
}

func (s *Shop) login(w http.ResponseWriter, r *http.Request) error {
	var req LoginRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&req); err != nil || req.Account == "" {
		http.Error(w, "want JSON {account, password}", http.StatusBadRequest)
		return nil
	}
	account := strings.ToLower(strings.TrimSpace(req.Account))
	// The limit is checked before the password: a failed limit check must
	// not let a guess through.
	if _, err := s.logins.Allow(r.Context(), account); err != nil {
		return err
	}
	if pw, ok := s.accounts[account]; !ok || pw != req.Password {
		http.Error(w, "wrong account or password", http.StatusUnauthorized)
		return nil
	}
	return writeJSON(w, map[string]string{"account": account, "status": "signed in"})
}

// PayRequest is the body of POST /pay.
type PayRequest struct {
	Order       string `json:"order"`
	AmountMinor int64  `json:"amount_minor"`
}

func (s *Shop) pay(w http.ResponseWriter, r *http.Request) error {
	var req PayRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&req); err != nil ||
		req.Order == "" || req.AmountMinor <= 0 {
		http.Error(w, "want JSON {order, amount_minor > 0}", http.StatusBadRequest)
		return nil
	}
	// No admission, no charge: Redis unavailable means 503 here, before
	// the provider is called.
	if err := s.payments.Admit(r.Context(), req.Order); err != nil {
		return err
	}
	pay, err := s.provider.Charge(r.Context(), "order:"+req.Order, req.AmountMinor)
	if errors.Is(err, ErrIdempotencyMismatch) {
		http.Error(w, "order already paid with another amount", http.StatusUnprocessableEntity)
		return nil
	}
	if err != nil {
		return err
	}
	return writeJSON(w, pay)
}

// RedisReport is the body of GET /debug/redis.
type RedisReport struct {
	State    string    `json:"state"`
	Writable bool      `json:"writable"`
	PingOK   bool      `json:"ping_ok"`
	At       time.Time `json:"at"`
	PingMS   float64   `json:"ping_ms"`
	WriteMS  float64   `json:"write_ms"`
	Error    string    `json:"error,omitempty"`
}

func (s *Shop) redisReport(w http.ResponseWriter, _ *http.Request) {
	r := s.monitor.Last()
	rep := RedisReport{State: r.State.String(), Writable: r.Writable(), PingOK: r.PingOK, At: r.At,
		PingMS: ms(r.Ping), WriteMS: ms(r.Write)}
	if r.Err != nil {
		rep.Error = r.Err.Error()
	}
	_ = writeJSON(w, rep)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func writeJSON(w http.ResponseWriter, v any) error {
	w.Header().Set("Content-Type", "application/json")
	return json.NewEncoder(w).Encode(v)
}
