package boutique

import (
	"context"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

type catalogService struct {
	products []Product
	byID     map[string]*Product
}

func newCatalog(seed uint64) *catalogService {
	s := &catalogService{products: GenerateCatalog(seed), byID: map[string]*Product{}}
	for i := range s.products {
		s.byID[s.products[i].ID] = &s.products[i]
	}
	return s
}

func (s *catalogService) ListProducts(context.Context, *Empty) (*ListProductsResponse, error) {
	return &ListProductsResponse{Products: s.products}, nil
}

func (s *catalogService) GetProduct(_ context.Context, req *GetProductRequest) (*Product, error) {
	p, ok := s.byID[req.ID]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "no product with id %q", req.ID)
	}
	return p, nil
}

func (s *catalogService) SearchProducts(_ context.Context, req *SearchProductsRequest) (*SearchProductsResponse, error) {
	q := strings.ToLower(req.Query)
	var res []Product
	for _, p := range s.products {
		if strings.Contains(strings.ToLower(p.Name), q) || strings.Contains(strings.ToLower(p.Description), q) {
			res = append(res, p)
		}
	}
	return &SearchProductsResponse{Results: res}, nil
}
