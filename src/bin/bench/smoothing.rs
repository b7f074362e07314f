pub(crate) fn table() {}
