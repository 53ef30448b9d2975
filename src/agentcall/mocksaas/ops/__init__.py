"""Operations behind the HTTP endpoints: validate input, decide (pure), store, publish."""
