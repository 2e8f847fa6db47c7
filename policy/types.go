package policy

// Category is an MCP-AQL semantic category.
type Category string

const (
	Create  Category = "CREATE"
	Read    Category = "READ"
	Update  Category = "UPDATE"
	Delete  Category = "DELETE"
	Execute Category = "EXECUTE"
)

// Categories lists the semantic categories in CRUDE order.
var Categories = []Category{Create, Read, Update, Delete, Execute}
