package boutique

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"text/template"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

var confirmation = template.Must(template.New("confirmation").Parse(`To: {{.Email}}
Subject: Your order {{.Order.OrderID}}

Thank you for shopping with us!

Order:       {{.Order.OrderID}}
Shipping to: {{.Order.ShippingAddress.StreetAddress}}, {{.Order.ShippingAddress.City}}, {{.Order.ShippingAddress.State}} {{.Order.ShippingAddress.ZipCode}}, {{.Order.ShippingAddress.Country}}
Tracking:    {{.Order.ShippingTrackingID}}
{{range .Order.Items}}
  {{.Item.Quantity}} x {{.Item.ProductID}} at {{.Cost}}{{end}}

Shipping: {{.Order.ShippingCost}}
Total:    {{.Order.Total}}
`))

// outboxSize is how many rendered messages the e-mail service keeps.
const outboxSize = 64

type emailService struct {
	mu     sync.Mutex
	outbox [][]byte // ring of the latest messages
	sent   int
}

func newEmail() *emailService { return &emailService{} }

func (s *emailService) SendOrderConfirmation(_ context.Context, req *SendOrderConfirmationRequest) (*Empty, error) {
	if at := strings.IndexByte(req.Email, '@'); at <= 0 || at == len(req.Email)-1 {
		return nil, status.Errorf(codes.InvalidArgument, "invalid e-mail address %q", req.Email)
	}
	var b bytes.Buffer
	if err := confirmation.Execute(&b, req); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	s.mu.Lock()
	if len(s.outbox) < outboxSize {
		s.outbox = append(s.outbox, b.Bytes())
	} else {
		s.outbox[s.sent%outboxSize] = b.Bytes()
	}
	s.sent++
	s.mu.Unlock()
	return &Empty{}, nil
}
