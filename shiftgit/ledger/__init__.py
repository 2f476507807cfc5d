"""The ledger: data model, schema, store, diff, merge driver, secret scanner, budgets."""
