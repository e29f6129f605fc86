"""Generate the bundled offline sample of the six EVE (Earth Observation) tasks.

All content below is original, hand-written for this project; it only mirrors the
*column layout* of the public ``eve-esa/*`` Hugging Face datasets.

Usage::

    python scripts/make_eve_sample.py            # writes runner/benchmarks/eve/sample/*.jsonl

Hallucination span offsets are computed here with ``str.find`` (never by hand).
"""

from __future__ import annotations

import json
import string
from pathlib import Path

OUT_DIR = Path(__file__).resolve().parents[1] / "runner" / "benchmarks" / "eve" / "sample"

REFUSAL_ANSWER = (
    "I'm sorry, but the provided context does not contain enough information to answer that question."
)

# ---------------------------------------------------------------------------
# 1. MCQA, single answer
# ---------------------------------------------------------------------------
# (question, choices, correct_choice_text)
MCQA_SINGLE: list[tuple[str, list[str], str]] = [
    (
        "How many spectral bands does the MultiSpectral Instrument (MSI) on Sentinel-2 acquire?",
        ["10", "12", "13", "15"],
        "13",
    ),
    (
        "In which microwave frequency band does the Sentinel-1 synthetic aperture radar operate?",
        ["L-band", "C-band", "X-band", "Ku-band"],
        "C-band",
    ),
    (
        "What is the nominal revisit interval of a single Landsat 8 satellite at the equator?",
        ["16 days", "8 days", "5 days", "26 days"],
        "16 days",
    ),
    (
        "Which expression defines the Normalized Difference Vegetation Index (NDVI)?",
        [
            "(Green − NIR) / (Green + NIR)",
            "(NIR − SWIR1) / (NIR + SWIR1)",
            "(Red − Blue) / (Red + Blue)",
            "(NIR − Red) / (NIR + Red)",
            "(Blue − SWIR2) / (Blue + SWIR2)",
        ],
        "(NIR − Red) / (NIR + Red)",
    ),
    (
        "Which instrument is carried by the Copernicus Sentinel-5 Precursor satellite?",
        ["OLCI", "TROPOMI", "SLSTR", "MSI"],
        "TROPOMI",
    ),
    (
        "Which Sentinel-3 instrument is used to measure sea surface height?",
        ["SRAL", "OLCI", "SLSTR"],
        "SRAL",
    ),
    (
        "What is the native spatial resolution of the thermal bands of the Landsat 8 Thermal Infrared Sensor (TIRS)?",
        ["30 m", "60 m", "100 m", "120 m"],
        "100 m",
    ),
    (
        "In repeat-pass differential SAR interferometry, one full fringe (a 2π phase cycle) corresponds to a "
        "line-of-sight displacement of:",
        ["One radar wavelength", "Half a radar wavelength", "A quarter of a radar wavelength", "Two radar wavelengths"],
        "Half a radar wavelength",
    ),
    (
        "What is the approximate swath width of the Sentinel-1 Interferometric Wide swath (IW) mode?",
        ["80 km", "400 km", "20 km", "250 km"],
        "250 km",
    ),
    (
        "Which property defines a Sun-synchronous orbit?",
        [
            "The satellite remains fixed above one point on the equator",
            "The orbital period is exactly 24 hours",
            "The orbital plane precesses about 0.986° per day, so equator crossings occur at a fixed local solar time",
            "The satellite is never in Earth's shadow",
        ],
        "The orbital plane precesses about 0.986° per day, so equator crossings occur at a fixed local solar time",
    ),
    (
        "How many spectral bands does the MODIS instrument on Terra and Aqua measure?",
        ["7", "16", "224", "36"],
        "36",
    ),
    (
        "Which of the following radar bands has the longest wavelength?",
        ["X-band", "C-band", "L-band", "P-band", "Ka-band"],
        "P-band",
    ),
    (
        "Which Copernicus service provides analyses and forecasts of atmospheric composition, such as aerosols, "
        "ozone and reactive gases?",
        [
            "Copernicus Marine Service (CMEMS)",
            "Copernicus Land Monitoring Service (CLMS)",
            "Copernicus Atmosphere Monitoring Service (CAMS)",
            "Copernicus Climate Change Service (C3S)",
        ],
        "Copernicus Atmosphere Monitoring Service (CAMS)",
    ),
    (
        "What is the primary geophysical quantity retrieved from GNSS radio occultation measurements?",
        [
            "Vertical profiles of atmospheric refractivity derived from signal bending angles",
            "Sea surface salinity",
            "Surface soil moisture",
            "Ocean chlorophyll-a concentration",
        ],
        "Vertical profiles of atmospheric refractivity derived from signal bending angles",
    ),
    (
        "What type of laser altimeter is the ATLAS instrument on ICESat-2?",
        [
            "A 532 nm photon-counting lidar",
            "A 1064 nm full-waveform lidar",
            "A C-band radar altimeter",
            "A 1550 nm scanning lidar",
        ],
        "A 532 nm photon-counting lidar",
    ),
]

# ---------------------------------------------------------------------------
# 2. MCQA, multiple answers
# ---------------------------------------------------------------------------
# (question, options, indices of correct options)
MCQA_MULTI: list[tuple[str, list[str], list[int]]] = [
    (
        "Which of the following Sentinel-2 MSI bands are acquired at 10 m spatial resolution?",
        ["B2 (blue)", "B5 (red edge)", "B4 (red)", "B11 (SWIR)", "B8 (NIR)", "B1 (coastal aerosol)"],
        [0, 2, 4],
    ),
    (
        "Which of the following are active remote sensing instruments?",
        [
            "Synthetic aperture radar",
            "Airborne laser scanner (LiDAR)",
            "Multispectral optical radiometer",
            "Radar altimeter",
            "Passive microwave radiometer",
        ],
        [0, 1, 3],
    ),
    (
        "Which Sentinel-3 instrument is primarily designed for ocean and land colour observations?",
        ["OLCI", "SLSTR", "SRAL", "MWR"],
        [0],
    ),
    (
        "Which of the following spectral indices use a shortwave-infrared (SWIR) band?",
        [
            "Normalized Burn Ratio (NBR)",
            "Normalized Difference Vegetation Index (NDVI)",
            "Normalized Difference Moisture Index (NDMI)",
            "Enhanced Vegetation Index (EVI)",
        ],
        [0, 2],
    ),
    (
        "Which of the following can degrade or bias the displacement signal in repeat-pass InSAR?",
        [
            "Spatial and temporal variations of tropospheric water vapour",
            "Temporal decorrelation caused by changes in vegetation or surface conditions",
            "Ionospheric phase delay, particularly at L-band",
            "Orbit determination errors",
            "Cloud cover blocking the radar signal",
        ],
        [0, 1, 2, 3],
    ),
    (
        "Which of the following trace gases are retrieved as operational products from Sentinel-5P TROPOMI?",
        ["Nitrogen dioxide (NO2)", "Carbon dioxide (CO2)", "Methane (CH4)", "Nitrous oxide (N2O)"],
        [0, 2],
    ),
    (
        "Which statements about geostationary orbits are correct?",
        [
            "The altitude is about 35,786 km above the equator",
            "The orbital period equals one sidereal day",
            "Meteosat weather satellites use this orbit",
            "They provide good coverage of the polar regions",
            "The orbit is Sun-synchronous",
        ],
        [0, 1, 2],
    ),
    (
        "Which Landsat 8/9 OLI band is dedicated to cirrus cloud detection?",
        ["Band 1", "Band 9", "Band 10", "Band 7"],
        [1],
    ),
    (
        "What is the full-resolution ground sampling of the Sentinel-3 OLCI instrument?",
        ["10 m", "300 m", "1 km"],
        [1],
    ),
    (
        "Which factors strongly influence radar backscatter from a land surface?",
        [
            "Surface roughness relative to the wavelength",
            "Dielectric constant, largely controlled by moisture content",
            "Local incidence angle",
            "Solar illumination angle",
        ],
        [0, 1, 2],
    ),
    (
        "Which of the following missions carry a radar altimeter?",
        ["Sentinel-3", "Sentinel-6 Michael Freilich", "CryoSat-2", "Sentinel-2", "GRACE-FO"],
        [0, 1, 2],
    ),
    (
        "Why can Sentinel-1 acquire images at night and through cloud cover?",
        [
            "It is an active microwave system that provides its own illumination",
            "It images in the thermal infrared, which is emitted day and night",
        ],
        [0],
    ),
    (
        "Which of the following are used for atmospheric correction of optical satellite imagery?",
        ["Sen2Cor", "LaSRC", "The 6S radiative transfer code", "SNAPHU"],
        [0, 1, 2],
    ),
    (
        "Which of the following instruments measure in the thermal infrared?",
        ["Landsat 8 TIRS", "ECOSTRESS", "Sentinel-1 C-SAR", "Sentinel-3 SLSTR", "Sentinel-5P TROPOMI"],
        [0, 1, 3],
    ),
    (
        "Which statements about GNSS radio occultation are correct?",
        [
            "It measures the bending of GNSS signals as they pass through the atmosphere",
            "Its bending angles yield refractivity profiles used to derive temperature and humidity",
            "It requires sunlight to operate",
            "Its measurements are strongly blocked by clouds",
        ],
        [0, 1],
    ),
]

# ---------------------------------------------------------------------------
# 3. Open-ended
# ---------------------------------------------------------------------------
OPEN_ENDED: list[tuple[str, str]] = [
    (
        "What is the difference between top-of-atmosphere (TOA) reflectance and surface reflectance?",
        "TOA reflectance is the reflectance measured at the sensor and includes the effects of atmospheric "
        "scattering and absorption by gases and aerosols. Surface (bottom-of-atmosphere) reflectance is obtained "
        "after atmospheric correction removes these effects, so it represents the reflective properties of the "
        "ground itself.",
    ),
    (
        "What is the revisit time of the Sentinel-2 mission?",
        "A single Sentinel-2 satellite revisits the same location every 10 days at the equator. With two satellites "
        "flying 180° apart in the same orbit, the revisit is 5 days at the equator, and it is shorter at higher "
        "latitudes where swaths from adjacent orbits overlap.",
    ),
    (
        "Why do SAR images contain speckle?",
        "Speckle arises because each SAR resolution cell contains many elementary scatterers whose coherent "
        "returns interfere constructively or destructively. This produces a granular, noise-like pattern that is "
        "typically reduced by multilooking or spatial speckle filters at the cost of spatial resolution.",
    ),
    (
        "How does differential SAR interferometry (DInSAR) measure ground deformation?",
        "DInSAR compares the phase of two SAR images acquired from nearly the same orbital position at different "
        "times. After removing the topographic and flat-earth phase contributions, the remaining phase difference "
        "reflects line-of-sight ground displacement, with one fringe corresponding to half the radar wavelength "
        "(about 2.8 cm for Sentinel-1 C-band).",
    ),
    (
        "What is the McFeeters Normalized Difference Water Index (NDWI) and what is it used for?",
        "The McFeeters NDWI is computed as (Green − NIR) / (Green + NIR). Open water reflects more green than "
        "near-infrared light, so it typically has positive values while vegetation and soil have negative values, "
        "making the index useful for delineating surface water bodies.",
    ),
    (
        "What is radiometric resolution, and how does it differ between Landsat 8 OLI and Landsat 9 OLI-2?",
        "Radiometric resolution is the number of distinguishable intensity levels a sensor can record, usually "
        "expressed as the bit depth of quantization. Landsat 8 OLI quantizes data to 12 bits, whereas Landsat 9 "
        "OLI-2 uses 14-bit quantization, giving it finer sensitivity to small radiance differences.",
    ),
    (
        "How does airborne LiDAR estimate forest canopy height?",
        "LiDAR emits laser pulses and measures the two-way travel time of their returns to compute range. The "
        "first returns typically come from the top of the canopy and the last returns from the ground, so canopy "
        "height is derived by subtracting a digital terrain model from a digital surface model built from these "
        "returns.",
    ),
    (
        "What is GNSS radio occultation?",
        "GNSS radio occultation is a limb-sounding technique in which a receiver on a low Earth orbit satellite "
        "tracks GNSS signals as they pass through the atmosphere. The measured signal bending angles are converted "
        "to refractivity profiles, from which temperature, pressure and humidity profiles are retrieved with high "
        "vertical resolution; the technique is largely insensitive to clouds.",
    ),
    (
        "How does a satellite radar altimeter determine sea surface height?",
        "The altimeter measures the two-way travel time of a radar pulse to obtain the range between the satellite "
        "and the sea surface. Sea surface height is the satellite's precisely determined orbital height minus this "
        "range, after corrections for ionospheric and tropospheric (wet and dry) path delays, sea state bias and "
        "tides.",
    ),
    (
        "What is the split-window technique for land or sea surface temperature retrieval?",
        "The split-window technique uses two adjacent thermal infrared channels, typically near 11 µm and 12 µm, "
        "which are affected differently by water vapour absorption. The brightness temperature difference between "
        "them is used to correct for atmospheric effects, and for land surfaces emissivity must also be accounted "
        "for.",
    ),
    (
        "What does Sentinel-5P measure and at what local time does it observe?",
        "Sentinel-5P carries the TROPOMI spectrometer, which measures in the ultraviolet, visible, near-infrared "
        "and shortwave-infrared ranges to retrieve trace gases such as NO2, O3, SO2, CO, CH4 and formaldehyde, as "
        "well as aerosol and cloud properties. It flies in a Sun-synchronous orbit with an ascending-node local "
        "time of 13:30 and provides near-daily global coverage.",
    ),
    (
        "What is the Copernicus Emergency Management Service?",
        "The Copernicus Emergency Management Service provides geospatial information for disasters such as floods, "
        "wildfires, storms and earthquakes. Its mapping component delivers rapid maps derived from satellite imagery "
        "during emergencies, and its early warning and monitoring component includes systems such as EFAS for floods "
        "and EFFIS for forest fires.",
    ),
    (
        "What do the VV and VH polarisation channels of Sentinel-1 represent?",
        "VV denotes a vertically polarised transmitted signal received in vertical polarisation (co-polarisation), "
        "while VH denotes vertical transmission and horizontal reception (cross-polarisation). Cross-polarised "
        "backscatter is mainly generated by volume scattering, for example in vegetation canopies, so VH is "
        "sensitive to vegetation structure.",
    ),
    (
        "What are the spatial resolutions of the MODIS instrument?",
        "MODIS acquires bands 1 and 2 (red and near-infrared) at 250 m, bands 3 to 7 at 500 m, and the remaining "
        "bands 8 to 36 at 1 km at nadir.",
    ),
    (
        "Why is atmospheric correction especially critical for ocean colour remote sensing?",
        "Over the ocean, the water-leaving radiance typically accounts for only about 10% or less of the "
        "top-of-atmosphere signal in the visible, the remainder coming from Rayleigh and aerosol scattering. Small "
        "errors in estimating the atmospheric contribution therefore cause large relative errors in the retrieved "
        "water-leaving reflectance and derived products such as chlorophyll-a.",
    ),
]

# ---------------------------------------------------------------------------
# 4. Open-ended with context
# ---------------------------------------------------------------------------
# Each row: question, answer, list of (doc, source, file_path) with 1-3 entries.
OPEN_ENDED_CTX: list[tuple[str, str, list[tuple[str, str, str]]]] = [
    (
        "Which technique does the Sentinel-1 IW mode use, and what benefit does it provide?",
        "The IW mode uses Terrain Observation with Progressive Scans SAR (TOPSAR), in which the antenna beam is "
        "steered in azimuth from backward to forward within each burst. This gives homogeneous image quality across "
        "the 250 km swath, which is formed by three sub-swaths, and greatly reduces scalloping compared with "
        "conventional ScanSAR.",
        [
            (
                "The Interferometric Wide swath (IW) mode is the main acquisition mode of Sentinel-1 over land. It "
                "acquires data over a 250 km swath at a single-look spatial resolution of about 5 m in range by 20 m "
                "in azimuth. IW mode captures three sub-swaths using Terrain Observation with Progressive Scans SAR "
                "(TOPSAR). With TOPSAR, in addition to steering the beam in range as in ScanSAR, the beam is "
                "electronically steered from backward to forward in the azimuth direction for each burst, which "
                "avoids scalloping and results in homogeneous image quality throughout the swath. Data can be "
                "acquired in single (HH or VV) or dual (HH+HV or VV+VH) polarisation.",
                "Sentinel-1 SAR Technical Guide (excerpt)",
                "docs/sentinel1_sar_technical_guide.pdf",
            )
        ],
    ),
    (
        "Besides bottom-of-atmosphere reflectance, what outputs does the Sentinel-2 Level-2A processing provide?",
        "In addition to BOA reflectance, Sen2Cor produces a Scene Classification (SCL) map, an Aerosol Optical "
        "Thickness (AOT) map and a Water Vapour (WVP) map, as well as cloud and snow probability masks.",
        [
            (
                "Level-2A products provide bottom-of-atmosphere (BOA) reflectance images derived from the associated "
                "Level-1C top-of-atmosphere products. The processing is performed by Sen2Cor, which applies "
                "atmospheric, terrain and cirrus corrections. Alongside the reflectance images, Sen2Cor generates a "
                "Scene Classification (SCL) map that labels pixels as, for example, vegetation, bare soil, water, "
                "cloud shadow, cloud or snow. It also outputs an Aerosol Optical Thickness (AOT) map and a Water "
                "Vapour (WVP) map, together with cloud and snow probability masks. The products are delivered in "
                "UTM/WGS84 tiles of 100 km × 100 km.",
                "Sentinel-2 Level-2A Product Handbook (excerpt)",
                "docs/sentinel2_l2a_product_handbook.pdf",
            )
        ],
    ),
    (
        "How is the ICESat-2 ATLAS laser output arranged into beams, and why are strong and weak beams used?",
        "ATLAS splits its 532 nm laser output into six beams arranged in three pairs, with the pairs about 3.3 km "
        "apart across track and the beams within a pair about 90 m apart. Each pair has a strong and a weak beam "
        "with an energy ratio of roughly 4:1, which provides sensitivity over both bright surfaces such as ice sheets "
        "and darker surfaces, and the pair geometry allows local cross-track slope to be measured.",
        [
            (
                "The Advanced Topographic Laser Altimeter System (ATLAS) is a photon-counting lidar operating at "
                "532 nm with a pulse repetition rate of 10 kHz, which yields a footprint spacing of about 0.7 m along "
                "track. The transmitted laser output is split into six beams arranged in three pairs. The pairs are "
                "separated by approximately 3.3 km across track, while the two beams within each pair are about 90 m "
                "apart, allowing the local cross-track surface slope to be determined. Within each pair, one strong "
                "and one weak beam are used with an energy ratio of roughly 4:1, which extends the dynamic range of "
                "the measurements over both highly reflective ice sheets and darker surfaces such as sea ice leads "
                "and vegetation.",
                "ICESat-2 ATLAS Instrument Overview (excerpt)",
                "docs/icesat2_atlas_overview.pdf",
            )
        ],
    ),
    (
        "What is the purpose of the AMR-C instrument on Sentinel-6 Michael Freilich?",
        "AMR-C is a microwave radiometer that measures atmospheric water vapour along the altimeter path, so that "
        "the wet tropospheric path delay of the Poseidon-4 radar signal can be corrected in the sea surface height "
        "measurements.",
        [
            (
                "Sentinel-6 Michael Freilich continues the reference sea level record established by TOPEX/Poseidon "
                "and the Jason series. It flies in a non-Sun-synchronous orbit at about 1336 km altitude with an "
                "inclination of 66° and a repeat cycle of about 10 days. The main payload is the Poseidon-4 dual-"
                "frequency (Ku- and C-band) radar altimeter, which can operate in a simultaneous low-resolution and "
                "high-resolution mode. Because water vapour in the troposphere delays the radar pulse, the satellite "
                "also carries the Advanced Microwave Radiometer for Climate (AMR-C), which measures the water vapour "
                "content along the altimeter path so that the wet tropospheric path delay can be corrected.",
                "Sentinel-6 Mission Overview (excerpt)",
                "docs/sentinel6_mission_overview.pdf",
            )
        ],
    ),
    (
        "Which Sentinel-2 bands should be used to compute NDVI at 10 m resolution?",
        "NDVI is computed as (NIR − Red) / (NIR + Red), so the 10 m red band B4 (about 665 nm) and the 10 m "
        "near-infrared band B8 (about 842 nm) should be used. The narrow NIR band B8A is only available at 20 m.",
        [
            (
                "The Normalized Difference Vegetation Index (NDVI) exploits the contrast between strong absorption of "
                "red light by chlorophyll and strong scattering of near-infrared light by the leaf mesophyll. It is "
                "calculated as (NIR − Red) / (NIR + Red) and ranges from −1 to +1. Dense, healthy vegetation generally "
                "yields values above about 0.6, whereas bare soil gives low positive values and water usually gives "
                "negative values.",
                "Vegetation Indices Primer (excerpt)",
                "docs/vegetation_indices_primer.pdf",
            ),
            (
                "The Sentinel-2 MultiSpectral Instrument samples 13 spectral bands at three spatial resolutions. The "
                "blue (B2, ~490 nm), green (B3, ~560 nm), red (B4, ~665 nm) and broad near-infrared (B8, ~842 nm) "
                "bands are provided at 10 m. The red-edge bands (B5, B6, B7), the narrow near-infrared band B8A "
                "(~865 nm) and the two shortwave-infrared bands (B11, B12) are provided at 20 m. The coastal aerosol "
                "(B1), water vapour (B9) and cirrus (B10) bands are provided at 60 m.",
                "Sentinel-2 MSI User Guide (excerpt)",
                "docs/sentinel2_msi_user_guide.pdf",
            ),
        ],
    ),
    (
        "How much line-of-sight displacement does one interferometric fringe represent in a Sentinel-1 "
        "interferogram?",
        "One fringe is a 2π phase change, which corresponds to a line-of-sight displacement of half the radar "
        "wavelength. With Sentinel-1's wavelength of about 5.55 cm, one fringe represents roughly 2.8 cm of "
        "displacement.",
        [
            (
                "In differential SAR interferometry, the phase difference between two acquisitions made at different "
                "times contains a contribution from surface displacement along the radar line of sight (LOS). Because "
                "the signal travels to the ground and back, a LOS displacement d produces a phase change of "
                "4πd/λ, where λ is the radar wavelength. Consequently, one complete fringe, corresponding to a phase "
                "change of 2π, represents a LOS displacement of λ/2. Only the component of motion along the LOS is "
                "observed, so combining ascending and descending geometries is needed to separate vertical and "
                "east-west motion.",
                "InSAR Principles Tutorial (excerpt)",
                "docs/insar_principles_tutorial.pdf",
            ),
            (
                "The C-SAR instrument on Sentinel-1 operates at a centre frequency of 5.405 GHz, corresponding to a "
                "wavelength of approximately 5.55 cm. Each satellite has a 12-day repeat cycle, and a two-satellite "
                "constellation reduces the repeat interval to 6 days. Tight orbit control keeps the satellites within "
                "a narrow orbital tube, which keeps perpendicular baselines small and supports "
                "repeat-pass interferometry.",
                "Sentinel-1 Mission Handbook (excerpt)",
                "docs/sentinel1_mission_handbook.pdf",
            ),
        ],
    ),
    (
        "Which Landsat 8 thermal band is used for the Collection 2 surface temperature product, and why?",
        "The Collection 2 Level-2 surface temperature product uses a single-channel algorithm based on TIRS Band 10, "
        "because Band 11 is more strongly affected by stray light and therefore has a larger calibration "
        "uncertainty. Surface emissivity is taken from the ASTER Global Emissivity Dataset.",
        [
            (
                "The Thermal Infrared Sensor (TIRS) on Landsat 8 acquires two thermal bands: Band 10 "
                "(10.60–11.19 µm) and Band 11 (11.50–12.51 µm), each with a native spatial resolution of 100 m that "
                "is resampled to 30 m in the delivered products. After launch, stray light from outside the "
                "instrument's field of view was found to add an unwanted signal, with a larger effect in Band 11 than "
                "in Band 10. Although a stray-light correction was later introduced, Band 11 retains a larger "
                "calibration uncertainty, and users have been advised to avoid relying on it for split-window "
                "retrievals.",
                "Landsat 8 TIRS Calibration Notes (excerpt)",
                "docs/landsat8_tirs_calibration_notes.pdf",
            ),
            (
                "The Landsat Collection 2 Level-2 surface temperature (ST) product is generated with a single-channel "
                "algorithm that uses only TIRS Band 10 for Landsat 8 and 9. The algorithm corrects for atmospheric "
                "transmission, upwelling and downwelling radiance using reanalysis atmospheric profiles. Surface "
                "emissivity is estimated from the ASTER Global Emissivity Dataset (GED), adjusted for vegetation and "
                "snow using NDVI and NDSI. Pixel-level uncertainty estimates are delivered alongside the ST band.",
                "Landsat Collection 2 Surface Temperature Product Guide (excerpt)",
                "docs/landsat_c2_st_product_guide.pdf",
            ),
        ],
    ),
    (
        "How can MODIS vegetation index products from Terra and Aqua be combined to increase temporal sampling?",
        "The MODIS vegetation index products are 16-day composites, and the Aqua (MYD13) compositing periods are "
        "phased 8 days apart from the Terra (MOD13) periods. Combining the two therefore yields a new vegetation index "
        "composite every 8 days.",
        [
            (
                "MODIS is carried on two satellites in Sun-synchronous orbits: Terra, with a descending-node equator "
                "crossing at about 10:30 local time, and Aqua, with an ascending-node crossing at about 13:30. Each "
                "instrument views the entire Earth every one to two days with a swath of about 2330 km. MODIS measures "
                "36 spectral bands between 0.4 and 14.4 µm, with bands 1 and 2 at 250 m resolution.",
                "MODIS Instrument Description (excerpt)",
                "docs/modis_instrument_description.pdf",
            ),
            (
                "The MODIS vegetation index products (MOD13 for Terra and MYD13 for Aqua) provide NDVI and the "
                "Enhanced Vegetation Index (EVI) as 16-day composites at 250 m, 500 m and 1 km resolution. Within each "
                "compositing period, the algorithm selects the best available observation based on low view angle, "
                "absence of clouds and high quality. The Aqua compositing periods are phased 8 days apart from those "
                "of Terra, so that using both products provides a vegetation index composite every 8 days.",
                "MODIS Vegetation Index User Guide (excerpt)",
                "docs/modis_vi_user_guide.pdf",
            ),
        ],
    ),
    (
        "At what local time does Sentinel-5P observe, how often does it cover the globe, and which quality filter is "
        "recommended for the tropospheric NO2 product?",
        "Sentinel-5P crosses the equator at 13:30 local solar time on its ascending node and, thanks to its swath of "
        "about 2600 km, provides near-daily global coverage. For most applications of the tropospheric NO2 column, "
        "pixels with a qa_value greater than 0.75 should be used.",
        [
            (
                "The TROPOspheric Monitoring Instrument (TROPOMI) is a nadir-viewing push-broom imaging spectrometer. "
                "It has four spectrometers covering the ultraviolet (UV), ultraviolet-visible (UVIS), near-infrared "
                "(NIR) and shortwave-infrared (SWIR) spectral ranges. The UV, UVIS and NIR ranges are used for gases "
                "such as ozone, NO2, SO2 and formaldehyde, while the SWIR range around 2.3 µm is used for carbon "
                "monoxide and methane.",
                "TROPOMI Instrument Overview (excerpt)",
                "docs/tropomi_instrument_overview.pdf",
            ),
            (
                "Sentinel-5P flies in a near-polar Sun-synchronous orbit at an altitude of about 824 km, with an "
                "ascending-node equator crossing at 13:30 local solar time. The instrument swath is approximately "
                "2600 km wide, which provides near-daily global coverage. The early-afternoon overpass was chosen to "
                "fly in loose formation with the Suomi NPP satellite, whose cloud observations can support the trace "
                "gas retrievals.",
                "Sentinel-5P Mission Description (excerpt)",
                "docs/sentinel5p_mission_description.pdf",
            ),
            (
                "Each pixel of the Level-2 NO2 product carries a qa_value between 0 and 1 summarising retrieval "
                "quality. For most applications, users are advised to keep only pixels with a qa_value greater than "
                "0.75, which removes cloud-covered scenes, snow- and ice-covered surfaces and retrievals affected by "
                "errors. A lower threshold of 0.5 may be appropriate when comparing with models using averaging "
                "kernels.",
                "Sentinel-5P NO2 Product User Manual (excerpt)",
                "docs/s5p_no2_product_user_manual.pdf",
            ),
        ],
    ),
    (
        "Why does open water appear dark in Sentinel-1 images, which preprocessing steps are applied before flood "
        "mapping, and what can cause false flood detections?",
        "Calm open water acts as a specular reflector, sending the radar signal away from the sensor, so it has very "
        "low backscatter, especially in VV polarisation. Before mapping, GRD data are corrected with precise orbits, "
        "thermal noise removal, radiometric calibration to sigma0, speckle filtering and terrain correction using a "
        "DEM. False detections can arise from other low-backscatter surfaces such as radar shadow, smooth tarmac and "
        "dry sand.",
        [
            (
                "Calm open water behaves as a specular reflector for microwaves: most of the incident energy is "
                "reflected away from the sensor, so very little is scattered back. As a result, open water appears "
                "dark in SAR images, particularly in co-polarised (VV or HH) channels. Wind-roughened water, however, "
                "can produce higher backscatter and reduce the contrast with land. Flooded vegetation can instead "
                "appear bright because of double-bounce scattering between the water surface and stems or trunks.",
                "SAR Flood Mapping Handbook (excerpt)",
                "docs/sar_flood_mapping_handbook.pdf",
            ),
            (
                "A typical preprocessing chain for Sentinel-1 Ground Range Detected (GRD) data starts with applying "
                "precise orbit files and removing thermal noise. The data are then radiometrically calibrated to the "
                "backscatter coefficient sigma0, and a speckle filter is applied to reduce noise. Finally, range-"
                "Doppler terrain correction with a digital elevation model converts the data to map geometry and "
                "corrects geometric distortions. Values are often converted to decibels before analysis.",
                "Sentinel-1 GRD Preprocessing Guide (excerpt)",
                "docs/sentinel1_grd_preprocessing.pdf",
            ),
            (
                "In rapid-mapping workflows, flood extent is frequently delineated by thresholding the calibrated "
                "backscatter, with thresholds selected automatically, for instance with Otsu's method on a bimodal "
                "histogram. Change detection against a pre-event reference image helps distinguish permanent water "
                "from flood water. False positives commonly arise from other surfaces with very low backscatter, "
                "such as radar shadow in mountainous terrain, smooth tarmac surfaces and dry sandy areas, which are "
                "often masked using a height-above-nearest-drainage layer or land cover data.",
                "Copernicus EMS Rapid Mapping Methods Note (excerpt)",
                "docs/cems_rapid_mapping_methods.pdf",
            ),
        ],
    ),
    (
        "Why is atmospheric correction of Sentinel-3 OLCI data difficult in turbid coastal waters, and what approach "
        "can be used instead?",
        "The water-leaving signal is only a small fraction of the OLCI top-of-atmosphere signal, and standard "
        "correction assumes the water is black in the near-infrared to estimate aerosols. In turbid coastal waters "
        "suspended sediments make the water reflect in the NIR, so this assumption fails and aerosols are "
        "overestimated; using shortwave-infrared bands, where water is still black, or coupled approaches such as "
        "neural networks, is an alternative.",
        [
            (
                "Over the ocean, water-leaving radiance typically contributes only about 10% or less of the signal "
                "measured at the top of the atmosphere in the visible domain. The remainder is due to scattering by "
                "air molecules (Rayleigh scattering) and aerosols, as well as surface reflection. Consequently, small "
                "errors in the atmospheric correction translate into large relative errors in the retrieved "
                "water-leaving reflectance.",
                "Ocean Colour Radiometry Fundamentals (excerpt)",
                "docs/ocean_colour_fundamentals.pdf",
            ),
            (
                "The Ocean and Land Colour Instrument (OLCI) on Sentinel-3 is a push-broom imaging spectrometer with "
                "21 spectral bands between 400 and 1020 nm. It provides full-resolution data at about 300 m and a "
                "swath of about 1270 km, tilted away from the sun to reduce sun glint. Several bands are located in "
                "the near-infrared to support atmospheric correction and the retrieval of aerosol properties.",
                "Sentinel-3 OLCI User Guide (excerpt)",
                "docs/sentinel3_olci_user_guide.pdf",
            ),
            (
                "Standard ocean colour atmospheric correction relies on the black-pixel assumption, which states that "
                "the water-leaving reflectance in the near-infrared is negligible, so that the NIR signal can be "
                "attributed to aerosols and extrapolated to visible wavelengths. In turbid coastal waters, suspended "
                "sediments cause significant NIR water-leaving reflectance, so the assumption fails and the aerosol "
                "contribution is overestimated, sometimes producing negative reflectances in the blue. Alternatives "
                "include using shortwave-infrared bands, where even turbid water remains essentially black, or "
                "coupled ocean-atmosphere inversions such as neural-network-based processors.",
                "Coastal Atmospheric Correction Review (excerpt)",
                "docs/coastal_atmospheric_correction_review.pdf",
            ),
        ],
    ),
    (
        "Why is GEDI lidar combined with SAR data to map above-ground forest biomass, and why are long radar "
        "wavelengths preferred?",
        "GEDI measures forest structure accurately but only in discrete ~25 m footprints between about 51.6° N and "
        "51.6° S, so it does not provide wall-to-wall coverage; SAR imagery provides continuous coverage over which "
        "GEDI-calibrated models can be applied. Long wavelengths such as L- and P-band penetrate deeper into the "
        "canopy and interact with trunks and large branches, so their backscatter saturates at higher biomass than "
        "shorter wavelengths.",
        [
            (
                "The Global Ecosystem Dynamics Investigation (GEDI) is a full-waveform lidar mounted on the "
                "International Space Station. It uses 1064 nm lasers to record waveforms from footprints about 25 m "
                "in diameter, from which canopy height and vertical structure metrics are derived. Owing to the orbit "
                "of the station, GEDI observations are limited to latitudes between approximately 51.6° N and "
                "51.6° S, and the footprints sample the surface along tracks rather than forming continuous images.",
                "GEDI Mission Overview (excerpt)",
                "docs/gedi_mission_overview.pdf",
            ),
            (
                "Synthetic aperture radar provides wall-to-wall imagery regardless of cloud cover, which makes it "
                "attractive for mapping forest properties over large areas. A common strategy is to calibrate "
                "empirical or machine-learning models relating SAR backscatter to biomass using sparse reference "
                "measurements such as field plots or spaceborne lidar footprints, and then to apply these models to "
                "the full SAR coverage. Multi-temporal stacks and combinations of polarisations are often used as "
                "predictors to reduce the influence of moisture and other non-biomass effects on backscatter.",
                "Forest Biomass Mapping Methods (excerpt)",
                "docs/forest_biomass_mapping_methods.pdf",
            ),
            (
                "The sensitivity of radar backscatter to above-ground biomass depends strongly on wavelength. At "
                "C-band, the signal interacts mainly with leaves and small twigs in the upper canopy and saturates at "
                "relatively low biomass levels. Longer wavelengths such as L-band and especially P-band penetrate "
                "deeper into the canopy and interact with trunks and large branches, which hold most of the woody "
                "biomass, so their backscatter saturates at considerably higher biomass values.",
                "Radar Remote Sensing of Forests (excerpt)",
                "docs/radar_forest_remote_sensing.pdf",
            ),
        ],
    ),
]

# ---------------------------------------------------------------------------
# 5. Refusal
# ---------------------------------------------------------------------------
# (question, context, topic) -- the context never contains the needed fact.
REFUSAL: list[tuple[str, str, str]] = [
    (
        "What is the revisit time of the Sentinel-2 constellation at the equator?",
        "The Sentinel-2 MultiSpectral Instrument samples 13 spectral bands from the visible to the shortwave "
        "infrared. Four bands in the blue, green, red and near-infrared are acquired at 10 m, six bands including "
        "the red-edge and SWIR bands at 20 m, and three atmospheric bands at 60 m. The red-edge bands are "
        "particularly useful for estimating chlorophyll content and leaf area index.",
        "Optical missions",
    ),
    (
        "On what date was Sentinel-1C launched?",
        "Sentinel-1 carries a C-band synthetic aperture radar that can operate in four exclusive acquisition modes: "
        "Stripmap, Interferometric Wide swath, Extra Wide swath and Wave mode. The Interferometric Wide swath mode is "
        "the default over land, while the Extra Wide swath mode is mainly used over sea ice and polar regions. Wave "
        "mode acquires small vignettes over the open ocean to support wave spectra retrieval.",
        "SAR",
    ),
    (
        "What is the swath width of the Landsat 9 OLI-2 instrument?",
        "Landsat 9 carries the Thermal Infrared Sensor 2 (TIRS-2), an improved version of the TIRS instrument on "
        "Landsat 8. TIRS-2 includes an additional baffle that substantially reduces stray light from outside the "
        "field of view, which affected the thermal bands of its predecessor. It is also designed with greater "
        "redundancy to meet a longer design life requirement.",
        "Optical missions",
    ),
    (
        "At what orbital altitude does ICESat-2 fly?",
        "ICESat-2's ATLAS instrument is a photon-counting lidar that records the arrival time of individual "
        "reflected photons. Because it is sensitive to single photons, the signal is accompanied by background "
        "photons from solar illumination, which must be filtered out during processing. The resulting photon cloud "
        "is used to derive elevations of land ice, sea ice, vegetation and inland water.",
        "LiDAR",
    ),
    (
        "What is the spatial resolution of TROPOMI nitrogen dioxide observations?",
        "Nitrogen dioxide in the troposphere is produced mainly by combustion processes in traffic, power generation "
        "and industry, with additional contributions from lightning, soils and biomass burning. Because its lifetime "
        "near the surface is only a few hours, NO2 concentrations are highest close to their sources, making "
        "satellite maps useful for identifying emission hotspots such as large cities and shipping lanes.",
        "Atmospheric composition",
    ),
    (
        "What sea surface height accuracy does the Sentinel-3 SRAL altimeter achieve?",
        "The SAR Radar Altimeter (SRAL) on Sentinel-3 is a dual-frequency Ku/C-band instrument. In addition to the "
        "conventional low-resolution mode, it can operate in SAR (delay-Doppler) mode, in which bursts of coherent "
        "pulses are processed to sharpen the along-track footprint. This improves measurements in coastal zones, "
        "over sea ice leads and over inland water bodies.",
        "Altimetry",
    ),
    (
        "Which NDVI threshold did the study use to classify dense vegetation?",
        "The Normalized Difference Vegetation Index is computed from red and near-infrared reflectance. Healthy "
        "vegetation absorbs most red light for photosynthesis while strongly scattering near-infrared radiation, "
        "which produces a high contrast between the two bands. The index is sensitive to soil background at low "
        "canopy cover and tends to saturate over very dense canopies.",
        "Spectral indices",
    ),
    (
        "What is the radar wavelength of the PALSAR-2 instrument on ALOS-2?",
        "L-band SAR signals penetrate further into vegetation canopies than C-band or X-band signals, and interact "
        "mainly with branches and trunks. This makes L-band observations valuable for forest mapping, biomass "
        "estimation and the detection of deforestation. L-band interferometry also tends to maintain coherence over "
        "vegetated areas for longer periods than shorter wavelengths.",
        "SAR",
    ),
    (
        "How many radio occultation profiles does the COSMIC-2 constellation provide per day?",
        "In GNSS radio occultation, a receiver on a low Earth orbit satellite tracks the signal of a GNSS satellite "
        "as it sets or rises behind the Earth's limb. The signal is bent and delayed by refractivity gradients in "
        "the atmosphere, and the bending angle is derived from the measured Doppler shift. Refractivity profiles "
        "obtained in this way are assimilated into numerical weather prediction models.",
        "GNSS-RO",
    ),
    (
        "Which digital elevation model is used for terrain correction in the operational Sentinel-1 processing?",
        "Because SAR is a side-looking ranging system, terrain introduces characteristic geometric distortions. "
        "Foreshortening compresses slopes facing the sensor, layover occurs when the top of a steep slope is imaged "
        "before its base, and radar shadow arises when slopes facing away from the sensor are not illuminated. These "
        "effects are most pronounced in mountainous regions and at steep incidence angles.",
        "SAR processing",
    ),
    (
        "What is the spectral sampling interval of the EnMAP hyperspectral imager in the VNIR?",
        "Hyperspectral imagers record hundreds of narrow, contiguous spectral bands, which allows diagnostic "
        "absorption features of minerals to be resolved. In geological mapping, features in the shortwave infrared "
        "around 2.2 µm and 2.3 µm are used to identify clay minerals, micas and carbonates, while iron oxides show "
        "absorption features in the visible and near-infrared.",
        "Hyperspectral",
    ),
    (
        "What total burned area was estimated in the report for the 2023 fire season?",
        "The Normalized Burn Ratio (NBR) is calculated from near-infrared and shortwave-infrared reflectance. Fire "
        "reduces near-infrared reflectance by destroying vegetation and increases shortwave-infrared reflectance by "
        "exposing dry soil and charred material. The difference between pre-fire and post-fire NBR (dNBR) is "
        "commonly used to map burn severity.",
        "Wildfire monitoring",
    ),
]

# ---------------------------------------------------------------------------
# 6. Hallucination detection
# ---------------------------------------------------------------------------
# Each row: question, answer, hard spans (substrings, definitely false, prob in (0.5, 1]),
# optional extra soft spans (substrings, prob <= 0.5). Correct rows have no spans.
# (question, answer, [(hard_substring, prob)], [(soft_only_substring, prob)])
HALLUCINATION: list[tuple[str, str, list[tuple[str, float]], list[tuple[str, float]]]] = [
    (
        "How many spectral bands does Sentinel-2 MSI have, and what is its finest spatial resolution?",
        "Sentinel-2 MSI acquires 12 spectral bands, with the finest spatial resolution of 10 m for the blue, green, "
        "red and near-infrared bands (B2, B3, B4 and B8).",
        [("12 spectral bands", 0.95)],
        [],
    ),
    (
        "In which frequency band does the Sentinel-1 radar operate?",
        "Sentinel-1 carries a C-band synthetic aperture radar operating at a centre frequency of 5.405 GHz, which "
        "corresponds to a wavelength of about 5.5 cm.",
        [],
        [],
    ),
    (
        "What is the revisit time of Landsat 8, and how does Landsat 9 change it?",
        "A single Landsat 8 satellite revisits the same location every 16 days. Landsat 9 flies in the same orbit "
        "offset by 8 days, so together they provide a combined revisit of 4 days.",
        [("4 days", 0.9)],
        [],
    ),
    (
        "How is NDVI calculated and why is it high over vegetation?",
        "NDVI is computed as (NIR − Red) / (NIR + Red) and ranges from −1 to +1. Healthy vegetation shows high "
        "positive values because chlorophyll strongly absorbs red light while the leaf structure strongly reflects "
        "near-infrared light.",
        [],
        [],
    ),
    (
        "What instrument does Sentinel-5P carry and what does it measure?",
        "Sentinel-5P carries the TROPOMI spectrometer, which observes in the ultraviolet, visible, near-infrared and "
        "shortwave-infrared ranges to retrieve trace gases such as NO2, O3, SO2, CO and CH4.",
        [],
        [],
    ),
    (
        "How much displacement does one InSAR fringe represent for Sentinel-1?",
        "In repeat-pass InSAR, one interferometric fringe corresponds to a line-of-sight displacement of a full "
        "radar wavelength, so for Sentinel-1 one fringe represents about 5.6 cm of motion.",
        [("a full radar wavelength", 0.9), ("about 5.6 cm", 0.85)],
        [],
    ),
    (
        "What kind of lidar is ATLAS on ICESat-2?",
        "ICESat-2 carries the ATLAS instrument, a full-waveform lidar operating at 1064 nm that splits its output "
        "into six beams arranged in three pairs.",
        [("full-waveform", 0.85), ("1064 nm", 0.95)],
        [],
    ),
    (
        "Which instruments are on board Sentinel-3?",
        "Sentinel-3 carries OLCI for ocean and land colour, SLSTR for sea and land surface temperature, and the SRAL "
        "radar altimeter together with a microwave radiometer for the wet-troposphere correction.",
        [],
        [],
    ),
    (
        "What does GNSS radio occultation measure?",
        "GNSS radio occultation measures the bending of GNSS signals as they pass through the atmosphere toward a "
        "receiver on a low Earth orbit satellite. The bending angle profiles are converted to refractivity, from which "
        "temperature, pressure and humidity profiles can be derived.",
        [],
        [],
    ),
    (
        "How many bands does MODIS have and at what resolution are bands 1 and 2 acquired?",
        "MODIS flies on the Terra and Aqua satellites and measures in 36 spectral bands, with bands 1 and 2 acquired "
        "at 500 m spatial resolution.",
        [("500 m", 0.9)],
        [("36 spectral bands", 0.2)],
    ),
    (
        "At what altitude do geostationary satellites orbit?",
        "Geostationary satellites orbit at an altitude of about 20,200 km above the equator, with an orbital period "
        "matching Earth's rotation, so they remain fixed over one longitude.",
        [("about 20,200 km", 0.95)],
        [],
    ),
    (
        "What does a Sentinel-2 Level-2A product contain?",
        "Sentinel-2 Level-2A products contain bottom-of-atmosphere surface reflectance generated by the Sen2Cor "
        "processor, along with a scene classification layer that flags clouds, cloud shadows, water and snow.",
        [],
        [],
    ),
    (
        "Who implements the Copernicus Marine Service and what does it provide?",
        "The Copernicus Marine Service (CMEMS) is implemented by EUMETSAT and provides ocean physics, sea ice and "
        "marine biogeochemistry analyses and forecasts.",
        [("EUMETSAT", 0.8)],
        [("sea ice", 0.15)],
    ),
    (
        "What thermal bands does Landsat 8 TIRS have?",
        "Landsat 8 TIRS has two thermal bands, Band 10 and Band 11, centred near 10.9 µm and 12.0 µm, with a native "
        "spatial resolution of 100 m.",
        [],
        [],
    ),
    (
        "What are the characteristics of the Sentinel-1 Interferometric Wide swath mode?",
        "Sentinel-1's Interferometric Wide swath mode covers a 400 km swath at about 5 m by 20 m resolution using the "
        "TOPSAR technique.",
        [("400 km", 0.9)],
        [],
    ),
    (
        "What is a Sun-synchronous orbit?",
        "A Sun-synchronous orbit is a near-polar orbit whose plane precesses by about 0.986° per day, so the "
        "satellite crosses the equator at the same local solar time on every descending (or every ascending) pass.",
        [],
        [],
    ),
]


# ---------------------------------------------------------------------------
# Builders
# ---------------------------------------------------------------------------
def _letters(n: int) -> list[str]:
    return list(string.ascii_uppercase[:n])


def build_mcqa_single() -> list[dict]:
    rows = []
    for question, choices, correct in MCQA_SINGLE:
        assert choices.count(correct) == 1, question
        answer = _letters(len(choices))[choices.index(correct)]
        rows.append({"Question": question, "Choices": choices, "Answer": answer})
    return rows


def build_mcqa_multi() -> list[dict]:
    rows = []
    for question, options, correct in MCQA_MULTI:
        labels = _letters(len(options))
        rows.append(
            {
                "Question": question,
                "Answers": [labels[i] for i in sorted(correct)],
                "Choices": {"label": labels, "text": options},
            }
        )
    return rows


def build_open_ended() -> list[dict]:
    return [{"Question": q, "Answer": a} for q, a in OPEN_ENDED]


def build_open_ended_ctx() -> list[dict]:
    rows = []
    for question, answer, docs in OPEN_ENDED_CTX:
        assert 1 <= len(docs) <= 3, question
        row: dict = {"Question": question, "Answer": answer}
        for i in range(3):
            doc, source, path = docs[i] if i < len(docs) else (None, None, None)
            row[f"Doc {i + 1}"] = doc
        for i in range(3):
            row[f"Source {i + 1}"] = docs[i][1] if i < len(docs) else None
        for i in range(3):
            row[f"file_path_{i + 1}"] = docs[i][2] if i < len(docs) else None
        rows.append(row)
    return rows


def build_refusal() -> list[dict]:
    return [{"Question": q, "Answer": REFUSAL_ANSWER, "Context": c, "Topic": t} for q, c, t in REFUSAL]


def _span(answer: str, text: str) -> tuple[int, int]:
    start = answer.find(text)
    if start < 0:
        raise ValueError(f"span {text!r} not found in answer {answer!r}")
    if answer.find(text, start + 1) >= 0:
        raise ValueError(f"span {text!r} is ambiguous in answer {answer!r}")
    return start, start + len(text)


def build_hallucination() -> list[dict]:
    rows = []
    for question, answer, hard, soft_only in HALLUCINATION:
        soft: list[dict] = []
        hard_labels: list[list[int]] = []
        for text, prob in hard:
            assert 0.5 < prob <= 1.0
            start, end = _span(answer, text)
            hard_labels.append([start, end])
            soft.append({"start": start, "end": end, "prob": prob, "text": answer[start:end]})
        for text, prob in soft_only:
            assert 0.0 < prob <= 0.5
            start, end = _span(answer, text)
            soft.append({"start": start, "end": end, "prob": prob, "text": answer[start:end]})
        soft.sort(key=lambda s: s["start"])
        hard_labels.sort()
        rows.append(
            {
                "Question": question,
                "Answer": answer,
                "Soft labels": soft,
                "Hard labels": hard_labels,
                "is_hallucinated": bool(hard),
            }
        )
    return rows


FILES = {
    "mcqa_single_answer.jsonl": build_mcqa_single,
    "mcqa_multiple_answers.jsonl": build_mcqa_multi,
    "open_ended.jsonl": build_open_ended,
    "open_ended_w_context.jsonl": build_open_ended_ctx,
    "refusal.jsonl": build_refusal,
    "hallucination_detection.jsonl": build_hallucination,
}


def main() -> None:
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    for name, builder in FILES.items():
        rows = builder()
        path = OUT_DIR / name
        with path.open("w", encoding="utf-8", newline="\n") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        print(f"wrote {len(rows):3d} rows -> {path}")


if __name__ == "__main__":
    main()
