package boutique

import (
	"context"
	"math/rand/v2"

	"github.com/slowpoke-dev/slowpoke/apps/internal/svc"
)

// maxRecommendations is how many products are recommended at most.
const maxRecommendations = 5

type recommendationService struct {
	catalog *ProductCatalogClient
	rnd     *svc.Rand
}

func newRecommendations(cfg svc.Config, d *dialer) (*recommendationService, error) {
	cc, err := d.dial(cfg, "productcatalog")
	if err != nil {
		return nil, err
	}
	return &recommendationService{catalog: NewProductCatalogClient(cc), rnd: svc.NewRand(cfg.Seed, 0xb0_0101)}, nil
}

func (s *recommendationService) ListRecommendations(ctx context.Context, req *ListRecommendationsRequest) (*ListRecommendationsResponse, error) {
	all, err := s.catalog.ListProducts(ctx, &Empty{})
	if err != nil {
		return nil, err
	}
	exclude := make(map[string]bool, len(req.ProductIDs))
	for _, id := range req.ProductIDs {
		exclude[id] = true
	}
	var ids []string
	for _, p := range all.Products {
		if !exclude[p.ID] {
			ids = append(ids, p.ID)
		}
	}
	s.rnd.Do(func(r *rand.Rand) {
		r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	})
	if len(ids) > maxRecommendations {
		ids = ids[:maxRecommendations]
	}
	return &ListRecommendationsResponse{ProductIDs: ids}, nil
}
