package function

func registerDatetime(r *Registry) {}
