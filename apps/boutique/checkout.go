package boutique

import (
	"context"
	"crypto/rand"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/slowpoke-dev/slowpoke/apps/internal/svc"
)

type checkoutService struct {
	cart     *CartClient
	catalog  *ProductCatalogClient
	currency *CurrencyClient
	shipping *ShippingClient
	payment  *PaymentClient
	email    *EmailClient
}

func newCheckout(cfg svc.Config, d *dialer) (*checkoutService, error) {
	conns, err := d.dialAll(cfg, "cart", "productcatalog", "currency", "shipping", "payment", "email")
	if err != nil {
		return nil, err
	}
	return &checkoutService{
		cart:     NewCartClient(conns["cart"]),
		catalog:  NewProductCatalogClient(conns["productcatalog"]),
		currency: NewCurrencyClient(conns["currency"]),
		shipping: NewShippingClient(conns["shipping"]),
		payment:  NewPaymentClient(conns["payment"]),
		email:    NewEmailClient(conns["email"]),
	}, nil
}

// PlaceOrder prices the user's cart in their currency, quotes and converts
// shipping, charges the total, ships, empties the cart and mails a
// confirmation.
func (s *checkoutService) PlaceOrder(ctx context.Context, req *PlaceOrderRequest) (*PlaceOrderResponse, error) {
	if req.UserID == "" || req.Email == "" {
		return nil, status.Error(codes.InvalidArgument, "user_id and email are required")
	}
	currency := req.UserCurrency
	if currency == "" {
		currency = "USD"
	}
	cart, err := s.cart.GetCart(ctx, &GetCartRequest{UserID: req.UserID})
	if err != nil {
		return nil, fmt.Errorf("getting cart: %w", err)
	}
	items := make([]OrderItem, 0, len(cart.Items))
	total := Money{CurrencyCode: currency}
	for _, it := range cart.Items {
		p, err := s.catalog.GetProduct(ctx, &GetProductRequest{ID: it.ProductID})
		if err != nil {
			return nil, fmt.Errorf("getting product %q: %w", it.ProductID, err)
		}
		cost, err := s.currency.Convert(ctx, &CurrencyConversionRequest{From: p.PriceUSD, ToCode: currency})
		if err != nil {
			return nil, fmt.Errorf("converting price of %q: %w", it.ProductID, err)
		}
		items = append(items, OrderItem{Item: it, Cost: *cost})
		if total, err = total.Add(cost.Mul(int64(it.Quantity))); err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
	}
	quote, err := s.shipping.GetQuote(ctx, &GetQuoteRequest{Address: req.Address, Items: cart.Items})
	if err != nil {
		return nil, fmt.Errorf("quoting shipping: %w", err)
	}
	shippingCost, err := s.currency.Convert(ctx, &CurrencyConversionRequest{From: quote.CostUSD, ToCode: currency})
	if err != nil {
		return nil, fmt.Errorf("converting shipping cost: %w", err)
	}
	if total, err = total.Add(*shippingCost); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	charge, err := s.payment.Charge(ctx, &ChargeRequest{Amount: total, CreditCard: req.CreditCard})
	if err != nil {
		return nil, fmt.Errorf("charging card: %w", err)
	}
	shipped, err := s.shipping.ShipOrder(ctx, &ShipOrderRequest{Address: req.Address, Items: cart.Items})
	if err != nil {
		return nil, fmt.Errorf("shipping order: %w", err)
	}
	if _, err := s.cart.EmptyCart(ctx, &EmptyCartRequest{UserID: req.UserID}); err != nil {
		return nil, fmt.Errorf("emptying cart: %w", err)
	}
	order := OrderResult{
		OrderID:            rand.Text(),
		ShippingTrackingID: shipped.TrackingID,
		ShippingCost:       *shippingCost,
		ShippingAddress:    req.Address,
		Items:              items,
		Total:              total,
		TransactionID:      charge.TransactionID,
	}
	// As in the original shop, a failed confirmation does not fail the
	// order, which is paid for and shipped already.
	s.email.SendOrderConfirmation(ctx, &SendOrderConfirmationRequest{Email: req.Email, Order: order})
	return &PlaceOrderResponse{Order: order}, nil
}
