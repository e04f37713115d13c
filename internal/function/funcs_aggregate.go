package function

func registerAggregate(r *Registry) {}
