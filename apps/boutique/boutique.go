// Package boutique is the OnlineBoutique benchmark: a web shop of nine
// services. The frontend serves HTTP/JSON to users; every other service
// serves gRPC (JSON-encoded messages, hand-written descriptors in api.go).
//
//	frontend ─┬─> currency
//	          ├─> productcatalog
//	          ├─> cart
//	          ├─> recommendations ──> productcatalog
//	          └─> checkout ─┬─> cart
//	                        ├─> productcatalog
//	                        ├─> currency
//	                        ├─> shipping
//	                        ├─> payment
//	                        └─> email
package boutique

import (
	"fmt"

	"google.golang.org/grpc"

	"github.com/slowpoke-dev/slowpoke/apps/internal/svc"
)

// App is the OnlineBoutique application.
var App = &svc.App{
	Name: "boutique",
	Services: []svc.ServiceInfo{
		{Name: "frontend", Port: 7100, Protocol: svc.HTTP},
		{Name: "cart", Port: 7101, Protocol: svc.GRPC},
		{Name: "checkout", Port: 7102, Protocol: svc.GRPC},
		{Name: "currency", Port: 7103, Protocol: svc.GRPC},
		{Name: "email", Port: 7104, Protocol: svc.GRPC},
		{Name: "payment", Port: 7105, Protocol: svc.GRPC},
		{Name: "productcatalog", Port: 7106, Protocol: svc.GRPC},
		{Name: "recommendations", Port: 7107, Protocol: svc.GRPC},
		{Name: "shipping", Port: 7108, Protocol: svc.GRPC},
	},
	New: newService,
}

func newService(name string, cfg svc.Config) (svc.Server, error) {
	if name == "frontend" {
		return newFrontend(cfg)
	}
	var d dialer
	var desc *grpc.ServiceDesc
	var impl any
	var err error
	switch name {
	case "cart":
		desc, impl = &CartServiceDesc, newCart()
	case "checkout":
		desc = &CheckoutServiceDesc
		impl, err = newCheckout(cfg, &d)
	case "currency":
		desc, impl = &CurrencyServiceDesc, newCurrency(cfg.Seed)
	case "email":
		desc, impl = &EmailServiceDesc, newEmail()
	case "payment":
		desc, impl = &PaymentServiceDesc, newPayment()
	case "productcatalog":
		desc, impl = &ProductCatalogServiceDesc, newCatalog(cfg.Seed)
	case "recommendations":
		desc = &RecommendationServiceDesc
		impl, err = newRecommendations(cfg, &d)
	case "shipping":
		desc, impl = &ShippingServiceDesc, newShipping(cfg.Seed)
	default:
		return nil, fmt.Errorf("unknown service %q", name)
	}
	if err != nil {
		d.close()
		return nil, err
	}
	s := svc.NewGRPCServer(cfg.PerCall())
	s.RegisterService(desc, impl)
	return svc.GRPCService(s, d.close), nil
}

// dialer opens the client connections of a service and closes them at
// shutdown.
type dialer struct{ conns []*grpc.ClientConn }

func (d *dialer) dial(cfg svc.Config, service string) (*grpc.ClientConn, error) {
	cc, err := svc.DialGRPC(cfg.Addr(service))
	if err != nil {
		return nil, fmt.Errorf("dialing %s: %w", service, err)
	}
	d.conns = append(d.conns, cc)
	return cc, nil
}

// dialAll dials the named services; on error it closes what it opened.
func (d *dialer) dialAll(cfg svc.Config, services ...string) (map[string]*grpc.ClientConn, error) {
	conns := make(map[string]*grpc.ClientConn, len(services))
	for _, name := range services {
		cc, err := d.dial(cfg, name)
		if err != nil {
			d.close()
			return nil, err
		}
		conns[name] = cc
	}
	return conns, nil
}

func (d *dialer) close() {
	for _, cc := range d.conns {
		cc.Close()
	}
}
