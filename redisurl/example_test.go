package redisurl_test

import (
	"errors"
	"fmt"

	"github.com/rediskit/rediskit/redisurl"
)

func Example() {
	c, err := redisurl.Parse("redis+sentinel://app:s3cret@10.0.0.1,10.0.0.2:26380/mymaster/2?sentinelPassword=t0p&preferReplica=true")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.Kind, c.Sentinels, c.MasterName, c.DB, c.ReadFrom)
	fmt.Println(c) // redacted
	// Output:
	// sentinel [10.0.0.1:26379 10.0.0.2:26380] mymaster 2 replicaPreferred
	// redis+sentinel://app:xxxxx@10.0.0.1:26379,10.0.0.2:26380/mymaster/2?sentinelPassword=xxxxx&readFrom=replicaPreferred
}

func ExampleParse_errors() {
	for _, u := range []string{
		"redis+sentinal://10.0.0.1/mymaster",
		"redis+sentinel://10.0.0.1:abc/mymaster",
		"redis+sentinel://10.0.0.1:26379",
		"redis://cache:6379?dial_timeout=2s",
		"redis://:pa/ss@cache:6379", // a '/' in the password is not encoded
	} {
		_, err := redisurl.Parse(u)
		var e *redisurl.Error
		if errors.As(err, &e) {
			fmt.Printf("%s | field %q\n", err, e.Field)
		}
	}
	// Output:
	// redisurl: unknown scheme "redis+sentinal" (did you mean redis+sentinel://?) | field "scheme"
	// redisurl: sentinel address "10.0.0.1:abc": invalid port (a number from 1 to 65535) | field "sentinel address"
	// redisurl: missing master name (redis+sentinel://host:26379/mymaster[/db]) | field "master name"
	// redisurl: unknown parameter "dial_timeout" (did you mean dialTimeout? Names are case-sensitive) | field "parameter"
	// redisurl: address: missing host (not shown: it may hold a password; percent-encode '@', '/', '?', '#', '&' and '%' in passwords) | field "address"
}

func ExampleConfig_Options() {
	c, err := redisurl.Parse("rediss://app:s3cret@cache.internal:6380/1?clientName=billing&dialTimeout=2s")
	if err != nil {
		fmt.Println(err)
		return
	}
	opt, err := c.Options() // reads no files: the URL has no caFile
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(opt.Addr, opt.DB, opt.ClientName, opt.DialTimeout, opt.MaxRetries, opt.DialerRetries, opt.TLSConfig != nil)
	// Output: cache.internal:6380 1 billing 2s -1 1 true
}

func ExampleConfig_URL() {
	c := redisurl.Config{Kind: redisurl.Standalone, Addr: "10.0.0.5:6379", Username: "app", Password: "p@ss/word", DB: 3}
	fmt.Println(c.URL())
	fmt.Println(c.Redacted())
	back, _ := redisurl.Parse(c.URL())
	fmt.Println(back.Password)
	// Output:
	// redis://app:p%40ss%2Fword@10.0.0.5:6379/3
	// redis://app:xxxxx@10.0.0.5:6379/3
	// p@ss/word
}
