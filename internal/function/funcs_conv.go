package function

func registerConv(r *Registry) {}
