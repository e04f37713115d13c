package function

func registerJson(r *Registry) {}
