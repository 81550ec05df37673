// Package redisopt is rediskit's one definition of how a go-redis client
// must behave under rediskit: the layer above decides what is retried and
// how long a call may take, so go-redis must not retry, must honour
// context deadlines, and must not send commands of its own on connect.
//
// Inner applies the policy to the options of a client rediskit builds
// (its inner clients, guard.ClientConfig, redisurl.Config.Options, multidb's
// Database.Options); InnerCluster applies it to go-redis cluster options
// (redisurl.Config.ClusterOptions). Check is the same policy read back from a client a
// caller built: guard.New and multidb.NewClient refuse what it reports.
// Every copy of the policy is one of these two functions; a package that
// needs it calls them rather than restating the fields.
package redisopt
