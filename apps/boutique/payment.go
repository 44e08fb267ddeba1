package boutique

import (
	"context"
	"crypto/rand"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

type paymentService struct {
	mu      sync.Mutex
	charged map[string]int64 // nanos charged per currency
	count   int64
}

func newPayment() *paymentService { return &paymentService{charged: map[string]int64{}} }

func (s *paymentService) Charge(_ context.Context, req *ChargeRequest) (*ChargeResponse, error) {
	if !req.Amount.Valid() || req.Amount.TotalNanos() < 0 {
		return nil, status.Errorf(codes.InvalidArgument, "invalid amount %+v", req.Amount)
	}
	if err := ValidateCard(req.CreditCard, time.Now()); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	s.mu.Lock()
	s.charged[req.Amount.CurrencyCode] += req.Amount.TotalNanos()
	s.count++
	s.mu.Unlock()
	return &ChargeResponse{TransactionID: rand.Text()}, nil
}

type cardError string

func (e cardError) Error() string { return string(e) }

// ValidateCard accepts VISA and MasterCard numbers with a valid Luhn check
// digit that have not expired at now.
func ValidateCard(c CreditCard, now time.Time) error {
	digits := strings.Map(func(r rune) rune {
		if r == ' ' || r == '-' {
			return -1
		}
		return r
	}, c.Number)
	if len(digits) < 13 || len(digits) > 19 {
		return cardError("credit card number has the wrong length")
	}
	sum := 0
	for i := range len(digits) {
		d := int(digits[len(digits)-1-i] - '0')
		if d < 0 || d > 9 {
			return cardError("credit card number must be digits")
		}
		if i%2 == 1 {
			if d *= 2; d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	if sum%10 != 0 {
		return cardError("credit card number is invalid")
	}
	switch {
	case digits[0] == '4':
	case digits[0] == '5' && digits[1] >= '1' && digits[1] <= '5':
	default:
		return cardError("only VISA or MasterCard cards are accepted")
	}
	if c.ExpirationMonth < 1 || c.ExpirationMonth > 12 {
		return cardError("invalid expiration month")
	}
	if int(c.ExpirationYear)*12+int(c.ExpirationMonth) < now.Year()*12+int(now.Month()) {
		return cardError("credit card expired")
	}
	return nil
}
