package boutique

import (
	"context"
	"fmt"
	"hash/fnv"
	"sync/atomic"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ShippingQuote is the shipping cost of units items, in US dollars: nothing
// for no items, else 5.99 plus 1.25 per item beyond the first.
func ShippingQuote(units int64) Money {
	if units <= 0 {
		return Money{CurrencyCode: "USD"}
	}
	return MoneyFromNanos("USD", 5_990_000_000+(units-1)*1_250_000_000)
}

type shippingService struct {
	seq atomic.Uint64
}

func newShipping(seed uint64) *shippingService {
	s := &shippingService{}
	s.seq.Store(seed << 32)
	return s
}

func countUnits(items []CartItem) int64 {
	var n int64
	for _, it := range items {
		n += int64(it.Quantity)
	}
	return n
}

func (s *shippingService) GetQuote(_ context.Context, req *GetQuoteRequest) (*GetQuoteResponse, error) {
	return &GetQuoteResponse{CostUSD: ShippingQuote(countUnits(req.Items))}, nil
}

func (s *shippingService) ShipOrder(_ context.Context, req *ShipOrderRequest) (*ShipOrderResponse, error) {
	a := req.Address
	if a.StreetAddress == "" || a.City == "" || a.Country == "" {
		return nil, status.Error(codes.InvalidArgument, "incomplete shipping address")
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%s|%s|%s|%s|%d", a.StreetAddress, a.City, a.State, a.Country, a.ZipCode)
	n := s.seq.Add(1)
	sum := h.Sum64()
	id := fmt.Sprintf("%c%c-%d-%08d", 'A'+byte(sum%26), 'A'+byte(sum/26%26), sum%1_000_000_000, n%100_000_000)
	return &ShipOrderResponse{TrackingID: id}, nil
}
