package function

func registerString(r *Registry) {}
