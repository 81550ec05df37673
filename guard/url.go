package guard

import "github.com/rediskit/rediskit/redisurl"

// ClientConfigFromURL returns the ClientConfig a redis://, rediss:// or unix://
// URL describes (see package redisurl for the syntax): the address,
// credentials, database, client name and TLS, and the URL's dialTimeout,
// readTimeout and writeTimeout when it sets them (else ClientConfig's
// 100 ms defaults). A URL does not carry a key prefix: set KeyPrefix,
// then Open.
//
//	s, err := guard.ClientConfigFromURL(os.Getenv("REDIS_URL"))
//	...
//	s.KeyPrefix = "shop"
//	g, err := guard.Open(s)
//
// A redis+sentinel:// URL names a master to discover, not a server: it is
// refused; give its redisurl.Config to the Sentinel client and wrap that
// client with New. Errors are *redisurl.Error values and never contain a
// password.
func ClientConfigFromURL(rawURL string) (ClientConfig, error) {
	c, err := redisurl.Parse(rawURL)
	if err != nil {
		return ClientConfig{}, err
	}
	o, err := c.Options()
	if err != nil {
		return ClientConfig{}, err
	}
	return ClientConfig{
		Addr:         o.Addr,
		Username:     o.Username,
		Password:     o.Password,
		DB:           o.DB,
		TLSConfig:    o.TLSConfig,
		ClientName:   o.ClientName,
		DialTimeout:  c.DialTimeout,
		ReadTimeout:  c.ReadTimeout,
		WriteTimeout: c.WriteTimeout,
	}, nil
}
