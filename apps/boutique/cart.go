package boutique

import (
	"context"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Bounds on a cart, so that a workload that adds more than it checks out
// does not grow carts without end: at most MaxCartLines distinct products
// (adding another drops the oldest line) and MaxQuantity of each.
const (
	MaxCartLines = 10
	MaxQuantity  = 10
)

type cartService struct {
	mu    sync.Mutex
	carts map[string][]CartItem
}

func newCart() *cartService { return &cartService{carts: map[string][]CartItem{}} }

func (s *cartService) AddItem(_ context.Context, req *AddItemRequest) (*Empty, error) {
	if req.UserID == "" || req.Item.ProductID == "" || req.Item.Quantity <= 0 {
		return nil, status.Error(codes.InvalidArgument, "user_id, item.product_id and a positive item.quantity are required")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	items := s.carts[req.UserID]
	for i := range items {
		if items[i].ProductID == req.Item.ProductID {
			items[i].Quantity = min(items[i].Quantity+req.Item.Quantity, MaxQuantity)
			return &Empty{}, nil
		}
	}
	item := req.Item
	item.Quantity = min(item.Quantity, MaxQuantity)
	if len(items) >= MaxCartLines {
		items = append(items[:0:0], items[len(items)-MaxCartLines+1:]...)
	}
	s.carts[req.UserID] = append(items, item)
	return &Empty{}, nil
}

func (s *cartService) GetCart(_ context.Context, req *GetCartRequest) (*Cart, error) {
	if req.UserID == "" {
		return nil, status.Error(codes.InvalidArgument, "user_id is required")
	}
	s.mu.Lock()
	items := append([]CartItem{}, s.carts[req.UserID]...)
	s.mu.Unlock()
	return &Cart{UserID: req.UserID, Items: items}, nil
}

func (s *cartService) EmptyCart(_ context.Context, req *EmptyCartRequest) (*Empty, error) {
	if req.UserID == "" {
		return nil, status.Error(codes.InvalidArgument, "user_id is required")
	}
	s.mu.Lock()
	delete(s.carts, req.UserID)
	s.mu.Unlock()
	return &Empty{}, nil
}
