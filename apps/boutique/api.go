package boutique

// The gRPC API of the shop's internal services, written by hand in the shape
// protoc-gen-go-grpc would give (server interfaces, service descriptors,
// client stubs). Messages are plain structs carried by svc.JSONCodec.

import (
	"context"

	"google.golang.org/grpc"

	"github.com/slowpoke-dev/slowpoke/apps/internal/svc"
)

// Empty is the empty message.
type Empty struct{}

// CartItem is a product and a quantity.
type CartItem struct {
	ProductID string `json:"product_id"`
	Quantity  int32  `json:"quantity"`
}

// Cart is a user's cart.
type Cart struct {
	UserID string     `json:"user_id"`
	Items  []CartItem `json:"items"`
}

// AddItemRequest adds an item to a user's cart.
type AddItemRequest struct {
	UserID string   `json:"user_id"`
	Item   CartItem `json:"item"`
}

// GetCartRequest asks for a user's cart.
type GetCartRequest struct {
	UserID string `json:"user_id"`
}

// EmptyCartRequest empties a user's cart.
type EmptyCartRequest struct {
	UserID string `json:"user_id"`
}

// ListProductsResponse is the whole catalog.
type ListProductsResponse struct {
	Products []Product `json:"products"`
}

// GetProductRequest asks for one product.
type GetProductRequest struct {
	ID string `json:"id"`
}

// SearchProductsRequest searches names and descriptions.
type SearchProductsRequest struct {
	Query string `json:"query"`
}

// SearchProductsResponse lists the matching products.
type SearchProductsResponse struct {
	Results []Product `json:"results"`
}

// GetSupportedCurrenciesResponse lists currency codes.
type GetSupportedCurrenciesResponse struct {
	CurrencyCodes []string `json:"currency_codes"`
}

// CurrencyConversionRequest converts an amount to another currency.
type CurrencyConversionRequest struct {
	From   Money  `json:"from"`
	ToCode string `json:"to_code"`
}

// CreditCard is a payment card.
type CreditCard struct {
	Number          string `json:"credit_card_number"`
	CVV             int32  `json:"credit_card_cvv"`
	ExpirationYear  int32  `json:"credit_card_expiration_year"`
	ExpirationMonth int32  `json:"credit_card_expiration_month"`
}

// ChargeRequest charges an amount to a card.
type ChargeRequest struct {
	Amount     Money      `json:"amount"`
	CreditCard CreditCard `json:"credit_card"`
}

// ChargeResponse identifies the transaction.
type ChargeResponse struct {
	TransactionID string `json:"transaction_id"`
}

// Address is a shipping address.
type Address struct {
	StreetAddress string `json:"street_address"`
	City          string `json:"city"`
	State         string `json:"state"`
	Country       string `json:"country"`
	ZipCode       int32  `json:"zip_code"`
}

// GetQuoteRequest asks what shipping items to an address costs.
type GetQuoteRequest struct {
	Address Address    `json:"address"`
	Items   []CartItem `json:"items"`
}

// GetQuoteResponse is a shipping cost in US dollars.
type GetQuoteResponse struct {
	CostUSD Money `json:"cost_usd"`
}

// ShipOrderRequest ships items to an address.
type ShipOrderRequest struct {
	Address Address    `json:"address"`
	Items   []CartItem `json:"items"`
}

// ShipOrderResponse identifies the shipment.
type ShipOrderResponse struct {
	TrackingID string `json:"tracking_id"`
}

// OrderItem is an ordered item and its unit cost in the user's currency.
type OrderItem struct {
	Item CartItem `json:"item"`
	Cost Money    `json:"cost"`
}

// OrderResult is a placed order.
type OrderResult struct {
	OrderID            string      `json:"order_id"`
	ShippingTrackingID string      `json:"shipping_tracking_id"`
	ShippingCost       Money       `json:"shipping_cost"`
	ShippingAddress    Address     `json:"shipping_address"`
	Items              []OrderItem `json:"items"`
	Total              Money       `json:"total"`
	TransactionID      string      `json:"transaction_id"`
}

// SendOrderConfirmationRequest mails an order confirmation.
type SendOrderConfirmationRequest struct {
	Email string      `json:"email"`
	Order OrderResult `json:"order"`
}

// ListRecommendationsRequest asks for products to recommend to a user who
// looks at (or has in the cart) ProductIDs.
type ListRecommendationsRequest struct {
	UserID     string   `json:"user_id"`
	ProductIDs []string `json:"product_ids"`
}

// ListRecommendationsResponse lists recommended product ids.
type ListRecommendationsResponse struct {
	ProductIDs []string `json:"product_ids"`
}

// PlaceOrderRequest checks a user's cart out.
type PlaceOrderRequest struct {
	UserID       string     `json:"user_id"`
	UserCurrency string     `json:"user_currency"`
	Address      Address    `json:"address"`
	Email        string     `json:"email"`
	CreditCard   CreditCard `json:"credit_card"`
}

// PlaceOrderResponse is the placed order.
type PlaceOrderResponse struct {
	Order OrderResult `json:"order"`
}

// ---- CartService ----

// CartServer is the cart service.
type CartServer interface {
	AddItem(context.Context, *AddItemRequest) (*Empty, error)
	GetCart(context.Context, *GetCartRequest) (*Cart, error)
	EmptyCart(context.Context, *EmptyCartRequest) (*Empty, error)
}

const cartServiceName = "boutique.CartService"

// CartServiceDesc describes the cart service.
var CartServiceDesc = grpc.ServiceDesc{
	ServiceName: cartServiceName,
	HandlerType: (*CartServer)(nil),
	Methods: []grpc.MethodDesc{
		svc.UnaryMethod(cartServiceName, "AddItem", CartServer.AddItem),
		svc.UnaryMethod(cartServiceName, "GetCart", CartServer.GetCart),
		svc.UnaryMethod(cartServiceName, "EmptyCart", CartServer.EmptyCart),
	},
}

// CartClient calls the cart service.
type CartClient struct{ cc grpc.ClientConnInterface }

// NewCartClient returns a client using cc.
func NewCartClient(cc grpc.ClientConnInterface) *CartClient { return &CartClient{cc} }

// AddItem adds an item to a cart.
func (c *CartClient) AddItem(ctx context.Context, in *AddItemRequest, opts ...grpc.CallOption) (*Empty, error) {
	out := new(Empty)
	if err := c.cc.Invoke(ctx, "/"+cartServiceName+"/AddItem", in, out, opts...); err != nil {
		return nil, err
	}
	return out, nil
}

// GetCart returns a cart.
func (c *CartClient) GetCart(ctx context.Context, in *GetCartRequest, opts ...grpc.CallOption) (*Cart, error) {
	out := new(Cart)
	if err := c.cc.Invoke(ctx, "/"+cartServiceName+"/GetCart", in, out, opts...); err != nil {
		return nil, err
	}
	return out, nil
}

// EmptyCart empties a cart.
func (c *CartClient) EmptyCart(ctx context.Context, in *EmptyCartRequest, opts ...grpc.CallOption) (*Empty, error) {
	out := new(Empty)
	if err := c.cc.Invoke(ctx, "/"+cartServiceName+"/EmptyCart", in, out, opts...); err != nil {
		return nil, err
	}
	return out, nil
}

// ---- ProductCatalogService ----

// ProductCatalogServer is the product catalog service.
type ProductCatalogServer interface {
	ListProducts(context.Context, *Empty) (*ListProductsResponse, error)
	GetProduct(context.Context, *GetProductRequest) (*Product, error)
	SearchProducts(context.Context, *SearchProductsRequest) (*SearchProductsResponse, error)
}

const catalogServiceName = "boutique.ProductCatalogService"

// ProductCatalogServiceDesc describes the product catalog service.
var ProductCatalogServiceDesc = grpc.ServiceDesc{
	ServiceName: catalogServiceName,
	HandlerType: (*ProductCatalogServer)(nil),
	Methods: []grpc.MethodDesc{
		svc.UnaryMethod(catalogServiceName, "ListProducts", ProductCatalogServer.ListProducts),
		svc.UnaryMethod(catalogServiceName, "GetProduct", ProductCatalogServer.GetProduct),
		svc.UnaryMethod(catalogServiceName, "SearchProducts", ProductCatalogServer.SearchProducts),
	},
}

// ProductCatalogClient calls the product catalog service.
type ProductCatalogClient struct{ cc grpc.ClientConnInterface }

// NewProductCatalogClient returns a client using cc.
func NewProductCatalogClient(cc grpc.ClientConnInterface) *ProductCatalogClient {
	return &ProductCatalogClient{cc}
}

// ListProducts returns the catalog.
func (c *ProductCatalogClient) ListProducts(ctx context.Context, in *Empty, opts ...grpc.CallOption) (*ListProductsResponse, error) {
	out := new(ListProductsResponse)
	if err := c.cc.Invoke(ctx, "/"+catalogServiceName+"/ListProducts", in, out, opts...); err != nil {
		return nil, err
	}
	return out, nil
}

// GetProduct returns one product.
func (c *ProductCatalogClient) GetProduct(ctx context.Context, in *GetProductRequest, opts ...grpc.CallOption) (*Product, error) {
	out := new(Product)
	if err := c.cc.Invoke(ctx, "/"+catalogServiceName+"/GetProduct", in, out, opts...); err != nil {
		return nil, err
	}
	return out, nil
}

// SearchProducts searches the catalog.
func (c *ProductCatalogClient) SearchProducts(ctx context.Context, in *SearchProductsRequest, opts ...grpc.CallOption) (*SearchProductsResponse, error) {
	out := new(SearchProductsResponse)
	if err := c.cc.Invoke(ctx, "/"+catalogServiceName+"/SearchProducts", in, out, opts...); err != nil {
		return nil, err
	}
	return out, nil
}

// ---- CurrencyService ----

// CurrencyServer is the currency service.
type CurrencyServer interface {
	GetSupportedCurrencies(context.Context, *Empty) (*GetSupportedCurrenciesResponse, error)
	Convert(context.Context, *CurrencyConversionRequest) (*Money, error)
}

const currencyServiceName = "boutique.CurrencyService"

// CurrencyServiceDesc describes the currency service.
var CurrencyServiceDesc = grpc.ServiceDesc{
	ServiceName: currencyServiceName,
	HandlerType: (*CurrencyServer)(nil),
	Methods: []grpc.MethodDesc{
		svc.UnaryMethod(currencyServiceName, "GetSupportedCurrencies", CurrencyServer.GetSupportedCurrencies),
		svc.UnaryMethod(currencyServiceName, "Convert", CurrencyServer.Convert),
	},
}

// CurrencyClient calls the currency service.
type CurrencyClient struct{ cc grpc.ClientConnInterface }

// NewCurrencyClient returns a client using cc.
func NewCurrencyClient(cc grpc.ClientConnInterface) *CurrencyClient { return &CurrencyClient{cc} }

// GetSupportedCurrencies lists the currency codes.
func (c *CurrencyClient) GetSupportedCurrencies(ctx context.Context, in *Empty, opts ...grpc.CallOption) (*GetSupportedCurrenciesResponse, error) {
	out := new(GetSupportedCurrenciesResponse)
	if err := c.cc.Invoke(ctx, "/"+currencyServiceName+"/GetSupportedCurrencies", in, out, opts...); err != nil {
		return nil, err
	}
	return out, nil
}

// Convert converts an amount.
func (c *CurrencyClient) Convert(ctx context.Context, in *CurrencyConversionRequest, opts ...grpc.CallOption) (*Money, error) {
	out := new(Money)
	if err := c.cc.Invoke(ctx, "/"+currencyServiceName+"/Convert", in, out, opts...); err != nil {
		return nil, err
	}
	return out, nil
}

// ---- PaymentService ----

// PaymentServer is the payment service.
type PaymentServer interface {
	Charge(context.Context, *ChargeRequest) (*ChargeResponse, error)
}

const paymentServiceName = "boutique.PaymentService"

// PaymentServiceDesc describes the payment service.
var PaymentServiceDesc = grpc.ServiceDesc{
	ServiceName: paymentServiceName,
	HandlerType: (*PaymentServer)(nil),
	Methods: []grpc.MethodDesc{
		svc.UnaryMethod(paymentServiceName, "Charge", PaymentServer.Charge),
	},
}

// PaymentClient calls the payment service.
type PaymentClient struct{ cc grpc.ClientConnInterface }

// NewPaymentClient returns a client using cc.
func NewPaymentClient(cc grpc.ClientConnInterface) *PaymentClient { return &PaymentClient{cc} }

// Charge charges a card.
func (c *PaymentClient) Charge(ctx context.Context, in *ChargeRequest, opts ...grpc.CallOption) (*ChargeResponse, error) {
	out := new(ChargeResponse)
	if err := c.cc.Invoke(ctx, "/"+paymentServiceName+"/Charge", in, out, opts...); err != nil {
		return nil, err
	}
	return out, nil
}

// ---- EmailService ----

// EmailServer is the e-mail service.
type EmailServer interface {
	SendOrderConfirmation(context.Context, *SendOrderConfirmationRequest) (*Empty, error)
}

const emailServiceName = "boutique.EmailService"

// EmailServiceDesc describes the e-mail service.
var EmailServiceDesc = grpc.ServiceDesc{
	ServiceName: emailServiceName,
	HandlerType: (*EmailServer)(nil),
	Methods: []grpc.MethodDesc{
		svc.UnaryMethod(emailServiceName, "SendOrderConfirmation", EmailServer.SendOrderConfirmation),
	},
}

// EmailClient calls the e-mail service.
type EmailClient struct{ cc grpc.ClientConnInterface }

// NewEmailClient returns a client using cc.
func NewEmailClient(cc grpc.ClientConnInterface) *EmailClient { return &EmailClient{cc} }

// SendOrderConfirmation mails an order confirmation.
func (c *EmailClient) SendOrderConfirmation(ctx context.Context, in *SendOrderConfirmationRequest, opts ...grpc.CallOption) (*Empty, error) {
	out := new(Empty)
	if err := c.cc.Invoke(ctx, "/"+emailServiceName+"/SendOrderConfirmation", in, out, opts...); err != nil {
		return nil, err
	}
	return out, nil
}

// ---- ShippingService ----

// ShippingServer is the shipping service.
type ShippingServer interface {
	GetQuote(context.Context, *GetQuoteRequest) (*GetQuoteResponse, error)
	ShipOrder(context.Context, *ShipOrderRequest) (*ShipOrderResponse, error)
}

const shippingServiceName = "boutique.ShippingService"

// ShippingServiceDesc describes the shipping service.
var ShippingServiceDesc = grpc.ServiceDesc{
	ServiceName: shippingServiceName,
	HandlerType: (*ShippingServer)(nil),
	Methods: []grpc.MethodDesc{
		svc.UnaryMethod(shippingServiceName, "GetQuote", ShippingServer.GetQuote),
		svc.UnaryMethod(shippingServiceName, "ShipOrder", ShippingServer.ShipOrder),
	},
}

// ShippingClient calls the shipping service.
type ShippingClient struct{ cc grpc.ClientConnInterface }

// NewShippingClient returns a client using cc.
func NewShippingClient(cc grpc.ClientConnInterface) *ShippingClient { return &ShippingClient{cc} }

// GetQuote quotes a shipment.
func (c *ShippingClient) GetQuote(ctx context.Context, in *GetQuoteRequest, opts ...grpc.CallOption) (*GetQuoteResponse, error) {
	out := new(GetQuoteResponse)
	if err := c.cc.Invoke(ctx, "/"+shippingServiceName+"/GetQuote", in, out, opts...); err != nil {
		return nil, err
	}
	return out, nil
}

// ShipOrder ships an order.
func (c *ShippingClient) ShipOrder(ctx context.Context, in *ShipOrderRequest, opts ...grpc.CallOption) (*ShipOrderResponse, error) {
	out := new(ShipOrderResponse)
	if err := c.cc.Invoke(ctx, "/"+shippingServiceName+"/ShipOrder", in, out, opts...); err != nil {
		return nil, err
	}
	return out, nil
}

// ---- RecommendationService ----

// RecommendationServer is the recommendation service.
type RecommendationServer interface {
	ListRecommendations(context.Context, *ListRecommendationsRequest) (*ListRecommendationsResponse, error)
}

const recommendationServiceName = "boutique.RecommendationService"

// RecommendationServiceDesc describes the recommendation service.
var RecommendationServiceDesc = grpc.ServiceDesc{
	ServiceName: recommendationServiceName,
	HandlerType: (*RecommendationServer)(nil),
	Methods: []grpc.MethodDesc{
		svc.UnaryMethod(recommendationServiceName, "ListRecommendations", RecommendationServer.ListRecommendations),
	},
}

// RecommendationClient calls the recommendation service.
type RecommendationClient struct{ cc grpc.ClientConnInterface }

// NewRecommendationClient returns a client using cc.
func NewRecommendationClient(cc grpc.ClientConnInterface) *RecommendationClient {
	return &RecommendationClient{cc}
}

// ListRecommendations recommends products.
func (c *RecommendationClient) ListRecommendations(ctx context.Context, in *ListRecommendationsRequest, opts ...grpc.CallOption) (*ListRecommendationsResponse, error) {
	out := new(ListRecommendationsResponse)
	if err := c.cc.Invoke(ctx, "/"+recommendationServiceName+"/ListRecommendations", in, out, opts...); err != nil {
		return nil, err
	}
	return out, nil
}

// ---- CheckoutService ----

// CheckoutServer is the checkout service.
type CheckoutServer interface {
	PlaceOrder(context.Context, *PlaceOrderRequest) (*PlaceOrderResponse, error)
}

const checkoutServiceName = "boutique.CheckoutService"

// CheckoutServiceDesc describes the checkout service.
var CheckoutServiceDesc = grpc.ServiceDesc{
	ServiceName: checkoutServiceName,
	HandlerType: (*CheckoutServer)(nil),
	Methods: []grpc.MethodDesc{
		svc.UnaryMethod(checkoutServiceName, "PlaceOrder", CheckoutServer.PlaceOrder),
	},
}

// CheckoutClient calls the checkout service.
type CheckoutClient struct{ cc grpc.ClientConnInterface }

// NewCheckoutClient returns a client using cc.
func NewCheckoutClient(cc grpc.ClientConnInterface) *CheckoutClient { return &CheckoutClient{cc} }

// PlaceOrder checks a cart out.
func (c *CheckoutClient) PlaceOrder(ctx context.Context, in *PlaceOrderRequest, opts ...grpc.CallOption) (*PlaceOrderResponse, error) {
	out := new(PlaceOrderResponse)
	if err := c.cc.Invoke(ctx, "/"+checkoutServiceName+"/PlaceOrder", in, out, opts...); err != nil {
		return nil, err
	}
	return out, nil
}
