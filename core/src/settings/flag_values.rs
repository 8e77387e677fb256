//! The fixed-choice settings as clap value enums (feature `clap`, which the command
//! line turns on and the browser build leaves off): `--help` lists every value with a
//! line about it, and a mistyped value gets clap's "did you mean" suggestion. Each
//! value is the name the rest of taks reads and writes (`name()`, serde).

use clap::ValueEnum;
use clap::builder::PossibleValue;

use crate::data::DatasetKind;
use crate::methods::Method;
use crate::nn::Architecture;
use crate::noise::NoiseKind;
use crate::precision::Precision;

impl ValueEnum for DatasetKind {
    fn value_variants<'a>() -> &'a [Self] {
        &DatasetKind::ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        let help = match self {
            DatasetKind::MnistDigits => "10,000 real MNIST digits bundled with taks",
            DatasetKind::Mnist => "MNIST from a folder of its four IDX files",
            DatasetKind::FashionMnist => "Fashion-MNIST from a folder of its four IDX files",
            DatasetKind::Cifar10 => "CIFAR-10, binary version",
            DatasetKind::Cifar100 => "CIFAR-100, binary version (fine labels)",
            DatasetKind::Folder => {
                "your own folder (--data-dir): train/, val/ and test/ of class sub-folders of images, the paper's Clothing1M protocol"
            }
        };
        Some(PossibleValue::new(self.name()).help(help))
    }
}

impl ValueEnum for NoiseKind {
    fn value_variants<'a>() -> &'a [Self] {
        &NoiseKind::ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        let help = match self {
            NoiseKind::Clean => "no label is changed",
            NoiseKind::Symmetric => "a flipped label goes to any other class",
            NoiseKind::Pairflip => "a flipped label goes to the next class",
            NoiseKind::Asymmetric => "labels flip to a similar class (the dataset's recipe)",
        };
        Some(PossibleValue::new(self.name()).help(help))
    }
}

impl ValueEnum for Method {
    fn value_variants<'a>() -> &'a [Self] {
        Method::all()
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.name()).help(self.help()))
    }
}

impl ValueEnum for Architecture {
    fn value_variants<'a>() -> &'a [Self] {
        &Architecture::ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        let help = match self {
            Architecture::Mlp => "one hidden layer of 256 (vectors, small grey images)",
            Architecture::Cnn => "the paper's 6-layer CNN (small colour images, 32x32)",
            Architecture::ResNet18 => "ResNet-18 (larger images)",
            Architecture::ResNet34 => "ResNet-34 (torchvision's; for --init)",
            Architecture::ResNet50 => "ResNet-50 (torchvision's bottleneck blocks; for --init)",
        };
        Some(PossibleValue::new(self.name()).help(help))
    }
}

impl ValueEnum for Precision {
    fn value_variants<'a>() -> &'a [Self] {
        &Precision::ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        let help = match self {
            Precision::F32 => "f32 throughout",
            Precision::F16 => {
                "f16 forward and backward passes, f32 weights, a dynamic loss scale (GPU only)"
            }
            Precision::Bf16 => "bf16 forward and backward passes, f32 weights (GPU only)",
        };
        Some(PossibleValue::new(self.name()).help(help))
    }
}
