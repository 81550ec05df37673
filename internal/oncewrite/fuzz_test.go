package oncewrite

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/classify"
	"github.com/rediskit/rediskit/exactlyonce"
	"github.com/rediskit/rediskit/internal/keyslot"
)

// FuzzWrap: for any command, Wrap (insisting) either refuses it with an
// *exactlyonce.UnsupportedError or returns the script call: EVALSHA of
// the script, the key count, a token key in the first key's slot, the
// command's keys, the token key's TTL, the write's id, then the
// command's arguments unchanged.
func FuzzWrap(f *testing.F) {
	for _, seed := range []string{"set k v", "incr {a}b", "mset {x}1 v {x}2 w", "blpop l 0", "get k", "flushall", "del a{}b c", "eval s 0"} {
		f.Add(seed)
	}
	w, err := New(&exactlyonce.Config{}, 0, classify.New(), nil)
	if err != nil {
		f.Fatal(err)
	}
	ctx := exactlyonce.With(context.Background(), true)
	f.Fuzz(func(t *testing.T, line string) {
		words := strings.Fields(line)
		if len(words) == 0 {
			return
		}
		args := make([]any, len(words))
		for i, w := range words {
			args[i] = w
		}
		cmd := redis.NewCmd(ctx, args...)
		q, err := w.Wrap(ctx, cmd)
		if err != nil {
			if !errors.Is(err, exactlyonce.ErrUnsupported) || !errors.Is(cmd.Err(), exactlyonce.ErrUnsupported) {
				t.Fatalf("%q: %v", line, err)
			}
			return
		}
		oc, ok := q.(*Cmd)
		if !ok {
			t.Fatalf("%q: %T", line, q)
		}
		out := oc.Args()
		keys := slices.Collect(w.classifier.KeyIndexes(args))
		if len(keys) == 0 || out[0] != "evalsha" || out[1] != SHA || out[2] != 1+len(keys) || out[3] != oc.Token() {
			t.Fatalf("%q: %v", line, out)
		}
		first, _ := classify.KeyString(args[keys[0]])
		if keyslot.Of(oc.Token()) != keyslot.Of(first) || !strings.HasPrefix(oc.Token(), exactlyonce.DefaultKeyPrefix) {
			t.Fatalf("%q: token %q not in the slot of %q", line, oc.Token(), first)
		}
		for i, k := range keys {
			if out[4+i] != args[k] {
				t.Fatalf("%q: key %d is %v", line, i, out[4+i])
			}
		}
		if out[4+len(keys)] != w.ttl || out[5+len(keys)] != oc.Field() {
			t.Fatalf("%q: TTL and field %v %v, want %v %v", line, out[4+len(keys)], out[5+len(keys)], w.ttl, oc.Field())
		}
		// The token key is the prefix, the slot's tag, the Writer's run and
		// a group in base 36; the field one hex digit.
		head := exactlyonce.DefaultKeyPrefix + "{" + keyslot.Tag(keyslot.Of(first)) + "}" + w.run + "."
		group, ok := strings.CutPrefix(oc.Token(), head)
		if _, err := strconv.ParseUint(group, 36, 64); !ok || err != nil {
			t.Fatalf("%q: token key %q is not %q and a group", line, oc.Token(), head)
		}
		if f := oc.Field(); len(f) != 1 || !strings.Contains("0123456789abcdef", f) {
			t.Fatalf("%q: field %q", line, f)
		}
		if !slices.Equal(out[6+len(keys):], args) {
			t.Fatalf("%q: the command is %v", line, out[6+len(keys):])
		}
		if again, _ := w.Wrap(ctx, oc); again != oc {
			t.Fatalf("%q: wrapped twice", line)
		}
	})
}
