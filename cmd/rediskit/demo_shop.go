package main

import (
	"context"
	"errors"
	"net/http/httptest"

	"github.com/rediskit/rediskit/examples/shop/shop"
	"github.com/rediskit/rediskit/guard"
	"github.com/rediskit/rediskit/lab"
)

// demoShop is the example shop (examples/shop/shop) as the tour runs it:
// a standalone Redis of its own, a guard on it, and the shop, with the
// tour's metrics wired the way the shop program wires them (its guard
// components reported, the Prometheus handler served at GET /metrics),
// listening on loopback.
type demoShop struct {
	lab   *lab.Lab
	node  *lab.Node
	guard *guard.Guard
	shop  *shop.Shop
	srv   *httptest.Server
}

// openShop starts the shop the first step that needs it; later steps get
// the same one. closeShop stops it.
func (d *demo) openShop(ctx context.Context) (*demoShop, error) {
	if d.shop != nil {
		return d.shop, nil
	}
	l, err := lab.Start(ctx, lab.Standalone())
	if err != nil {
		return nil, err
	}
	ds := &demoShop{lab: l, node: l.Node(0)}
	ds.guard, err = guard.Open(guard.ClientConfig{Addr: ds.node.Addr(), KeyPrefix: "shop"})
	if err != nil {
		_ = ds.close()
		return nil, err
	}
	ds.shop, err = shop.New(shop.Config{Guard: ds.guard, Metrics: d.metrics, MetricsHandler: d.metricsHandler})
	if err != nil {
		_ = ds.close()
		return nil, err
	}
	ds.srv = httptest.NewServer(ds.shop.Handler())
	d.shop = ds
	return ds, nil
}

// closeShop stops the shop, its guard and its Redis, if they run.
func (d *demo) closeShop() error {
	if d.shop == nil {
		return nil
	}
	err := d.shop.close()
	d.shop = nil
	return err
}

func (s *demoShop) close() error {
	var errs []error
	if s.srv != nil {
		s.srv.Close()
	}
	if s.shop != nil {
		errs = append(errs, s.shop.Close())
	}
	if s.guard != nil {
		errs = append(errs, s.guard.Close())
	}
	if s.node.Paused() {
		errs = append(errs, s.node.Resume())
	}
	return errors.Join(append(errs, s.lab.Close())...)
}
