package rediskit

import (
	"fmt"
	"reflect"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/optconv"
	"github.com/rediskit/rediskit/redisurl"
)

// Coming from go-redis's NewClient. redis.Options is, field for field,
// redis.UniversalOptions of one server, but for the five fields below:
// FromOptions copies every shared field into a UniversalOptions and
// converts it by universalRules (the same mapping and the same refusals as
// FromUniversalOptions), and converts the other five by optionsRules. A
// field go-redis adds to Options later, shared with UniversalOptions,
// follows its rule there; one of Options' own without a rule is refused
// when set, and TestOptionsRulesCoverEveryField fails until it has one.

// OptionsError is the error of FromOptions when some fields cannot be
// converted: each one, and why.
type OptionsError struct {
	Refused []RefusedOption
}

func (e *OptionsError) Error() string {
	return optconv.Message("rediskit", "redis.Options", e.Refused)
}

// FromOptions converts go-redis's options for NewClient (one server) into
// a Config, field by field: Addr (or a Unix socket: Network "unix") is the
// URL's server, which NewClient probes as any redis:// URL (it may be a
// cluster node; set Config.Kind to KindStandalone on the result to keep
// go-redis's choice without the probe), and every other field is mapped
// or refused as FromUniversalOptions does (see the README's table). A
// field whose value the Config cannot honour is refused: the error is an
// *OptionsError listing every such field and why, and the Config is zero.
func FromOptions(o *redis.Options) (Config, error) {
	if o == nil {
		return Config{}, fmt.Errorf("rediskit: FromOptions(nil)")
	}
	var uo redis.UniversalOptions
	var st optionsState
	ov, uv := reflect.ValueOf(o).Elem(), reflect.ValueOf(&uo).Elem()
	for i := range ov.NumField() {
		f := ov.Type().Field(i)
		if !f.IsExported() || optionsRules[f.Name] != nil {
			continue
		}
		// A shared field: the universal rule decides.
		if dst := uv.FieldByName(f.Name); dst.IsValid() && dst.Type() == f.Type {
			dst.Set(ov.Field(i))
		}
	}
	// Options' own fields (and a set field neither shared nor known).
	refused := optconv.Convert(o, &st, optionsOwn())
	if st.socket == "" {
		uo.Addrs = []string{st.addr}
		if st.addr == "" {
			uo.Addrs = nil // go-redis's default, 127.0.0.1:6379
		}
	}
	cfg, err := convertUniversal(&uo, universalRules)
	if ue, ok := err.(*UniversalOptionsError); ok {
		refused = append(refused, ue.Refused...)
	}
	if len(refused) > 0 {
		return Config{}, &OptionsError{Refused: refused}
	}
	if st.socket != "" {
		u, perr := redisurl.Parse(cfg.URL)
		if perr != nil {
			return Config{}, perr
		}
		u.Kind, u.Addr, u.SocketPath = redisurl.Unix, "", st.socket
		cfg.URL = u.URL()
	}
	return cfg, nil
}

// optionsState is what Options' own fields give.
type optionsState struct {
	addr, socket string
}

type optionsRule = optconv.Rule[redis.Options, optionsState]

// optionsRules convert the fields of redis.Options that UniversalOptions
// lacks (go-redis v9.23); TestOptionsRulesCoverEveryField checks it.
var optionsRules = map[string]optionsRule{
	"Network": func(o *redis.Options, st *optionsState) string {
		switch o.Network {
		case "", "tcp":
		case "unix":
			st.socket = o.Addr
		default:
			return "rediskit dials tcp, or a Unix socket (\"unix\"); leave it empty"
		}
		return ""
	},
	"Addr": func(o *redis.Options, st *optionsState) string {
		if o.Network != "unix" {
			st.addr = o.Addr
		}
		return ""
	},
	"NodeAddress": func(o *redis.Options, _ *optionsState) string {
		if o.NodeAddress != "" {
			return "it names the node for go-redis's maintenance notifications, which rediskit turns off (it follows topology changes itself); leave it empty"
		}
		return ""
	},
	"DialerRetryBackoff": func(o *redis.Options, _ *optionsState) string {
		if o.DialerRetryBackoff != nil {
			return optconv.ReasonDialRetries
		}
		return ""
	},
	"Limiter": func(o *redis.Options, _ *optionsState) string {
		if o.Limiter != nil {
			return "rediskit's node clients take no go-redis Limiter: bound the load in front of the client with package guard " +
				"(its rate limiter and admission control); leave it nil"
		}
		return ""
	},
}

// optionsOwn are optionsRules, with every field shared with
// UniversalOptions passed (its universal rule decides), for
// optconv.Convert over the whole of redis.Options.
func optionsOwn() map[string]optionsRule {
	rules := make(map[string]optionsRule, len(optionsRules))
	u := reflect.TypeFor[redis.UniversalOptions]()
	t := reflect.TypeFor[redis.Options]()
	for i := range t.NumField() {
		f := t.Field(i)
		if uf, ok := u.FieldByName(f.Name); ok && uf.Type == f.Type && optionsRules[f.Name] == nil {
			rules[f.Name] = func(*redis.Options, *optionsState) string { return "" }
		}
	}
	for name, r := range optionsRules {
		rules[name] = r
	}
	return rules
}
