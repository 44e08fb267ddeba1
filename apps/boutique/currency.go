package boutique

import (
	"context"
	"slices"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

type currencyService struct {
	rates map[string]float64
	codes []string
}

func newCurrency(seed uint64) *currencyService {
	rates := GenerateRates(seed)
	codes := make([]string, 0, len(rates))
	for c := range rates {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	return &currencyService{rates: rates, codes: codes}
}

func (s *currencyService) GetSupportedCurrencies(context.Context, *Empty) (*GetSupportedCurrenciesResponse, error) {
	return &GetSupportedCurrenciesResponse{CurrencyCodes: s.codes}, nil
}

func (s *currencyService) Convert(_ context.Context, req *CurrencyConversionRequest) (*Money, error) {
	m, err := Convert(s.rates, req.From, req.ToCode)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	return &m, nil
}
