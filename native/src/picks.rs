//! A method list as the user writes it: method names, or `all` for every registered
//! method. A value enum so `--help` lists the choices and a typo gets a suggestion.

use std::sync::LazyLock;

use clap::ValueEnum;
use clap::builder::PossibleValue;
use taks_core::methods::Method;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MethodPick {
    All,
    One(Method),
}

/// `all`, then every registered method.
static PICKS: LazyLock<Vec<MethodPick>> = LazyLock::new(|| {
    std::iter::once(MethodPick::All)
        .chain(Method::all().iter().map(|&m| MethodPick::One(m)))
        .collect()
});

impl ValueEnum for MethodPick {
    fn value_variants<'a>() -> &'a [Self] {
        &PICKS[..]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        match self {
            MethodPick::All => Some(PossibleValue::new("all").help("every method")),
            MethodPick::One(method) => method.to_possible_value(),
        }
    }
}

/// The methods picked, in order, each once; `all` anywhere means every method.
pub fn methods(picks: &[MethodPick]) -> Vec<Method> {
    if picks.contains(&MethodPick::All) {
        return Method::all().to_vec();
    }
    let mut out = Vec::new();
    for pick in picks {
        if let MethodPick::One(method) = pick
            && !out.contains(method)
        {
            out.push(*method);
        }
    }
    out
}
