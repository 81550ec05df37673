package replica

import (
	"flag"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	flag.Parse()
	var opts []goleak.Option
	if f := flag.Lookup("test.bench"); f != nil && f.Value.String() != "" {
		// The comparison benchmarks run go-redis v9.23's
		// NewFailoverClusterClient, whose Close never closes the sentinel
		// client and subscription it opened (its sentinelFailover has no
		// owner to close it). Tests, which run without -bench, stay strict.
		opts = append(opts,
			goleak.IgnoreTopFunction("github.com/redis/go-redis/v9.(*sentinelFailover).listen"),
			goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9.(*channel).initHealthCheck.func1"),
			goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9.(*channel).initMsgChan.func1"))
	}
	goleak.VerifyTestMain(m, opts...)
}
