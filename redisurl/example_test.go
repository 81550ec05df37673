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

// A cluster URL lists seed nodes; go-redis's form (addr parameters) reads
// the same and is written in rediskit's.
func ExampleParse_cluster() {
	for _, u := range []string{
		"redis+cluster://app:s3cret@10.0.0.1:7000,10.0.0.2:7001,10.0.0.3?readFrom=replicaPreferred",
		"redis://app:s3cret@10.0.0.1:7000?addr=10.0.0.2:7001&addr=10.0.0.3:6379&readFrom=replicaPreferred",
		"redis+cluster://10.0.0.1/2",
	} {
		c, err := redisurl.Parse(u)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(c.Kind, c.Addrs, c.ReadFrom)
		fmt.Println(c)
	}
	c, _ := redisurl.Parse("rediss+cluster://:s3cret@10.0.0.1,10.0.0.2?dialTimeout=1s")
	o, err := c.ClusterOptions() // for go-redis's ClusterClient
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(o.Addrs, o.DialTimeout, o.MaxRetries, o.MaxRedirects, o.TLSConfig != nil)
	// Output:
	// cluster [10.0.0.1:7000 10.0.0.2:7001 10.0.0.3:6379] replicaPreferred
	// redis+cluster://app:xxxxx@10.0.0.1:7000,10.0.0.2:7001,10.0.0.3:6379?readFrom=replicaPreferred
	// cluster [10.0.0.1:7000 10.0.0.2:7001 10.0.0.3:6379] replicaPreferred
	// redis+cluster://app:xxxxx@10.0.0.1:7000,10.0.0.2:7001,10.0.0.3:6379?readFrom=replicaPreferred
	// redisurl: db "2": Redis Cluster has only database 0 (remove the database from the URL)
	// [10.0.0.1:6379 10.0.0.2:6379] 1s -1 -1 true
}
